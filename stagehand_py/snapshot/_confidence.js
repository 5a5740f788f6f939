// DOM confidence: how much of what a person sees on the page the accessibility outline can tell a
// model, as one number in 0..1 (1 = the outline says it all, 0 = only pixels do).
//
// Called with `this` = a Document (the whole page) or an Element (a scoped snapshot). It walks
// visible elements (aria-hidden / inert subtrees and unrendered elements are skipped, as in the
// snapshot walker), through open shadow roots and same-origin iframes, and measures:
//
//   canvasArea    visible <canvas> area, as a share of the area looked at (the document's scroll
//                 area, at least one viewport; a scoped element's own box)
//   interactive   controls a user can operate: links, buttons, form fields, widget roles,
//                 tabindex >= 0, contenteditable, inline onclick
//   unnamed       interactive elements whose accessible name is empty
//   graphics      pixel-only indicators: an outermost <svg> with no accessible name whose parent
//                 has no text and no name of its own (a status icon in a table cell, the drawing
//                 inside an unlabelled icon button), and <img> without an alt attribute
//   semantic      nodes the outline can say something about: elements with a non-generic role
//                 (an unnamed control, svg, img or canvas does not count), and elements that carry
//                 text of their own
//
// The score multiplies four factors, each 1 when its signal is absent:
//
//   canvas    1 - 0.7 * min(1, canvasShare / 0.4)              40% of the page in canvas: x0.3
//   unnamed   1 - 0.6 * min(1, (unnamed / interactive) / 0.4)  40% of controls unnamed: x0.4
//   graphics  1 - 0.6 * min(1, (graphics / (graphics + semantic)) / 0.15)
//   sparse    1 - 0.5 * max(0, 1 - semantic / 15)              no semantic node at all: x0.5
//
// Role and name come from the snapshot's own ARIA rules (snapshot/_aria.js), the same on every page.
// Closed shadow roots and cross-origin frames are not entered.
function () {
  const STRUCTURAL = new Set(['', 'generic', 'none', 'presentation', 'ignored', 'genericcontainer']);
  const WIDGETS = new Set([
    'button', 'link', 'checkbox', 'radio', 'textbox', 'searchbox', 'combobox', 'listbox', 'option',
    'menuitem', 'menuitemcheckbox', 'menuitemradio', 'tab', 'switch', 'slider', 'spinbutton', 'treeitem',
  ]);
  const SKIP = new Set(['head', 'script', 'style', 'noscript', 'template', 'meta', 'link', 'title', 'base']);
  const ARIA = __ARIA__;
  const text = (s) => (s || '').replace(/\s+/g, ' ').trim();
  const roleOf = (el) => ARIA.roleOf(el);
  const nameOf = (el) => { try { return ARIA.nameOf(el, roleOf(el)); } catch (e) { return ''; } };

  const isInteractive = (el, role) => {
    if (WIDGETS.has(role)) return true;
    const tag = el.localName;
    if (tag === 'a' && el.hasAttribute('href')) return true;
    if (tag === 'button' || tag === 'select' || tag === 'textarea') return true;
    if (tag === 'input' && (el.type || '').toLowerCase() !== 'hidden') return true;
    if (el.isContentEditable && !(el.parentElement && el.parentElement.isContentEditable)) return true;
    if (el.hasAttribute('onclick')) return true;
    const tabindex = el.getAttribute('tabindex');
    return tabindex !== null && Number(tabindex) >= 0;
  };

  const ownText = (el) => {
    for (let c = el.firstChild; c; c = c.nextSibling) {
      if (c.nodeType === 3 && c.nodeValue.trim()) return true;
    }
    return false;
  };

  let canvasArea = 0, interactive = 0, unnamed = 0, graphics = 0, semantic = 0, elements = 0;

  const visit = (el) => {
    const tag = el.localName;
    if (SKIP.has(tag)) return;
    if (el.getAttribute('aria-hidden') === 'true' || el.inert) return;
    const shown = el.checkVisibility({ visibilityProperty: true }) || getComputedStyle(el).display === 'contents';
    if (shown) {
      elements++;
      const role = roleOf(el);
      let says = !STRUCTURAL.has(role) || ownText(el);
      if (says && (tag === 'svg' || tag === 'img' || tag === 'canvas')) says = !!nameOf(el);  // a bare drawing says nothing
      if (isInteractive(el, role)) {
        interactive++;
        if (!nameOf(el)) { unnamed++; says = ownText(el); }  // "button" alone says nothing
      }
      if (says) semantic++;
      if (tag === 'canvas') {
        const r = el.getBoundingClientRect();
        canvasArea += Math.max(0, r.width) * Math.max(0, r.height);
      } else if (tag === 'img' && !el.hasAttribute('alt')) {
        const r = el.getBoundingClientRect();
        if (r.width * r.height > 0) graphics++;
      } else if (tag === 'svg' && !(el.parentElement && el.parentElement.closest('svg'))) {
        const r = el.getBoundingClientRect();
        const parent = el.parentElement || (el.parentNode && el.parentNode.host);
        const parentSays = parent && (ownText(parent) || text(parent.getAttribute('aria-label')) ||
          (parent.getAttribute('aria-labelledby') && nameOf(parent)));
        if (r.width * r.height > 0 && !nameOf(el) && !parentSays) graphics++;
      }
      if (tag === 'svg') return;  // an SVG's insides are drawing, not outline
    }
    // Hidden elements can still have visible children (display: contents, visibility overrides).
    if (el.shadowRoot) for (let c = el.shadowRoot.firstElementChild; c; c = c.nextElementSibling) visit(c);
    for (let c = el.firstElementChild; c; c = c.nextElementSibling) visit(c);
    if ((tag === 'iframe' || tag === 'frame') && shown) {
      let inner = null;
      try { inner = el.contentDocument; } catch (e) { inner = null; }
      if (inner && inner.documentElement) visit(inner.documentElement);
    }
  };

  let area;
  if (this.nodeType === 9) {
    const doc = this, win = doc.defaultView, top = doc.documentElement;
    area = Math.max(top ? top.scrollWidth : 0, win ? win.innerWidth : 0) *
           Math.max(top ? top.scrollHeight : 0, win ? win.innerHeight : 0);
    if (top) visit(top);
  } else {
    const r = this.getBoundingClientRect();
    area = r.width * r.height;
    visit(this);
  }
  const canvasShare = area > 0 ? Math.min(1, canvasArea / area) : 0;
  const factors = {
    canvas: 1 - 0.7 * Math.min(1, canvasShare / 0.4),
    unnamed: 1 - 0.6 * Math.min(1, (interactive ? unnamed / interactive : 0) / 0.4),
    graphics: 1 - 0.6 * Math.min(1, (graphics + semantic ? graphics / (graphics + semantic) : 0) / 0.15),
    sparse: 1 - 0.5 * Math.max(0, 1 - semantic / 15),
  };
  const score = factors.canvas * factors.unnamed * factors.graphics * factors.sparse;
  return {
    score: Math.round(score * 1000) / 1000, canvasShare: Math.round(canvasShare * 1000) / 1000,
    interactive, unnamed, graphics, semantic, elements, factors, computed: false,
  };
}
