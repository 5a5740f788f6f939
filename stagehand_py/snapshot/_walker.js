// In-page half of the snapshot, run in the library's own isolated world (a JS world the page
// cannot see or reach: its prototypes, JSON and globals are not the page's, so a page that
// overrides Element.prototype methods or JSON.stringify cannot forge a line).
//
// Called with `this` = a Document, a ShadowRoot or an Element, and `afterScan` (true on the
// document's first walk: the Python side then decides whether to look for its closed shadow
// roots over CDP, and later walks ask again only for possible hosts that are new). Frames are not entered:
// each frame's document gets its own call, and the Python side stitches them under the iframe
// lines (it marks each iframe element with its frame id beforehand, store.frames).
//
// Returns one JSON string: [meta, stream]. `stream` lists the DOM in document order, each
// element followed by its shadow root's children, then its light children:
//   element: kind (1 HTML, 2 other namespace), tag, id, bits, role, name, value, extra, shadow, kids
//            extra = href of a link, or the frame id of an iframe; shadow = -1 (none) or
//            2 * count + (1 if closed); kids = number of light children that follow
//   text:    3, id, text    (only text XPath counts: with a character other than space/tab/CR/LF)
// Ids are small numbers kept per document in the world's store, so the same node keeps its id
// across snapshots. role/name come from our own ARIA rules (_aria.js, inlined as ARIA below).
function (afterScan) {
  const VISIBLE = 1, CHECKED = 2, MIXED = 4, SELECTED = 8, DISABLED = 16, EXPANDED = 32,
        COLLAPSED = 64, SCROLLABLE = 128, FILLED = 256, REQUIRED = 512, FOCUSED = 1024,
        FALLBACK_UNUSED = 2048;
  const ARIA = __ARIA__;
  const store = __STORE__;  // this world's store, made by whichever of our calls comes first
  const scanned = store.scanned;
  if (afterScan) store.scanned = true;
  const idOf = (n) => {
    let id = store.ids.get(n);
    if (id === undefined) {
      id = store.next++;
      store.ids.set(n, id);
      store.nodes.set(id, new WeakRef(n));
    }
    return id;
  };

  const doc = this.ownerDocument || this;
  const out = [];
  const active = doc.activeElement;
  const scrollingElement = doc.scrollingElement;
  const TEXT_INPUT = /^(text|email|search|url|tel|number|date|datetime-local|month|week|time|color|range)$/;
  const XPATH_NONBLANK = /[^ \t\n\r]/;
  const SKIP = new Set(['head', 'script', 'style', 'noscript', 'template', 'meta', 'link', 'title', 'base']);
  const XHTML = 'http://www.w3.org/1999/xhtml';
  // Possible hosts of a closed shadow root we cannot see from here: custom elements, and the
  // standard elements that may carry a shadow root when what renders does not match their light
  // DOM (one without child nodes that has a box, or one whose children are not rendered though
  // styled to be). Not seen: a root on a standard element holding only out-of-flow content.
  // The Python side looks for closed roots over CDP (costly on big pages) only when there are some.
  const HOST_TAGS = new Set(['article', 'aside', 'blockquote', 'body', 'div', 'footer', 'h1', 'h2', 'h3', 'h4', 'h5',
                             'h6', 'header', 'main', 'nav', 'p', 'section', 'span']);
  let hosts = 0;
  const possibleHost = (el) => {
    if (store.seen.has(el)) return;
    store.seen.add(el);
    hosts++;
  };
  // A lone surrogate (a broken half of an emoji) is not text any parser downstream accepts:
  // repair it to U+FFFD here, before anything parses it.
  const wellFormed = (s) => (typeof s === 'string' && !s.isWellFormed() ? s.toWellFormed() : s);

  const describe = (el, hidden) => {
    if (hidden) return [0, null, null, null];
    const tag = el.localName;
    let bits = 0, role = null, name = null, value = null;
    let shown = el.checkVisibility({ visibilityProperty: true });
    if (!shown) {
      // No box of its own, but its children render: <option> inside a closed <select>,
      // display:contents wrappers.
      if (tag === 'option' || tag === 'optgroup') shown = !!el.closest('select');
      else if (getComputedStyle(el).display === 'contents') shown = true;
    }
    if (!shown || hidden) return [0, null, null, null];
    bits |= VISIBLE;
    role = ARIA.roleOf(el);
    try { name = ARIA.nameOf(el, role); } catch (e) { name = ''; }  // a name nested past the stack
    const aria = (a) => el.getAttribute(a);
    if (el.checked === true || aria('aria-checked') === 'true' || aria('aria-pressed') === 'true') bits |= CHECKED;
    if (el.indeterminate === true || aria('aria-checked') === 'mixed') bits |= MIXED;
    if ((tag === 'option' && el.selected) || aria('aria-selected') === 'true') bits |= SELECTED;
    if (el.disabled === true || aria('aria-disabled') === 'true') bits |= DISABLED;
    const expanded = aria('aria-expanded');
    if (expanded === 'true' || (tag === 'details' && el.open)) bits |= EXPANDED;
    else if (expanded === 'false') bits |= COLLAPSED;
    if (el.required === true || aria('aria-required') === 'true') bits |= REQUIRED;
    if (el === active && el !== doc.body) bits |= FOCUSED;
    if (tag === 'input') {
      const type = (el.type || 'text').toLowerCase();
      // A password's value never leaves the page: only the fact that it is filled. Nor does a
      // one-time code's: marked as one, or typed one digit per box (a box that takes 1 character).
      if (type === 'password' || (el.getAttribute('autocomplete') || '').includes('one-time-code') || el.maxLength === 1) {
        if (el.value) bits |= FILLED;
      }
      else if (TEXT_INPUT.test(type) && el.value) value = el.value;
    } else if (tag === 'textarea') {
      if (el.value) value = el.value;
    } else if (tag === 'select') {
      const labels = Array.from(el.selectedOptions || [], (o) => o.label || o.text);
      if (labels.length) value = labels.join(', ');
    }
    if (value !== null && value.length > 300) value = value.slice(0, 300) + '…';
    if (el.scrollHeight > el.clientHeight + 1 || el.scrollWidth > el.clientWidth + 1) {
      if (el === scrollingElement) {
        if (el.scrollHeight > el.clientHeight + 1) bits |= SCROLLABLE;
      } else if (el.clientHeight > 0 || el.clientWidth > 0) {
        const style = getComputedStyle(el);
        const scrolls = (v) => v === 'auto' || v === 'scroll' || v === 'overlay';
        if ((scrolls(style.overflowY) && el.scrollHeight > el.clientHeight + 1) ||
            (scrolls(style.overflowX) && el.scrollWidth > el.clientWidth + 1)) bits |= SCROLLABLE;
      }
    }
    return [bits, role, name, value];
  };

  // An explicit stack: a DOM 10,000 levels deep must not overflow the call stack. Items are
  // (node, hidden, textShown); pushed in reverse so they come off in document order.
  const stack = [];
  const pushKids = (parent, hidden, textShown) => {
    for (let c = parent.lastChild; c; c = c.previousSibling) {
      const type = c.nodeType;
      if (type === 1 || (type === 3 && textShown && XPATH_NONBLANK.test(c.nodeValue))) stack.push(c, hidden, textShown);
    }
  };
  const countKids = (parent, textShown) => {
    let n = 0;
    for (let c = parent.firstChild; c; c = c.nextSibling) {
      const type = c.nodeType;
      if (type === 1 || (type === 3 && textShown && XPATH_NONBLANK.test(c.nodeValue))) n++;
    }
    return n;
  };

  const visit = (el, hidden, parentShown) => {
    const tag = el.localName;
    if (el.getAttribute('aria-hidden') === 'true' || el.inert) hidden = true;
    const skipped = SKIP.has(tag);
    const [bits0, role, name, value] = skipped ? [0, null, null, null] : describe(el, hidden);
    let bits = bits0;
    let extra = null;
    // The URL as the browser resolves it (new URL(href, document.baseURI).href); an SVG link's
    // href is not a string: its attribute is resolved in Python.
    if ((tag === 'a' || tag === 'area') && el.hasAttribute('href')) {
      extra = typeof el.href === 'string' && el.href ? el.href : el.getAttribute('href');
    }
    else if (tag === 'iframe' || tag === 'frame') extra = store.frames.get(el) || null;
    let shadow = null, closed = false;
    if (!skipped) {
      shadow = el.shadowRoot;
      if (!shadow) {
        shadow = store.closed.get(el) || null;
        closed = !!shadow;
        if (!shadow) {
          if (tag.includes('-') || el.hasAttribute('is')) possibleHost(el);
          // (no child node at all: whitespace alone gives a box in preformatted text)
          else if (bits & VISIBLE && !el.firstChild && HOST_TAGS.has(tag) && el.namespaceURI === XHTML &&
                   el.offsetWidth > 0 && el.offsetHeight > 0) possibleHost(el);
        }
      }
      if (parentShown && !(bits & VISIBLE) && !hidden) {
        // Not rendered though its parent is: a closed root on the parent that does not slot it?
        const parent = el.parentNode;
        if (parent && parent.nodeType === 1 && HOST_TAGS.has(parent.localName) && !store.closed.get(parent) &&
            !parent.shadowRoot) {
          const style = getComputedStyle(el);
          if (style.display !== 'none' && style.visibility === 'visible') possibleHost(parent);
        }
      }
    }
    // A <slot>'s own children are fallback content, not rendered once something is slotted.
    let childrenHidden = hidden;
    if (tag === 'slot' && el.assignedNodes().length) { bits |= FALLBACK_UNUSED; childrenHidden = true; }
    const textShown = !skipped && !!(bits & VISIBLE) && !(bits & FALLBACK_UNUSED);
    const kids = skipped ? 0 : countKids(el, textShown);
    const shadowKids = shadow ? countKids(shadow, true) : -1;
    out.push(el.namespaceURI === XHTML ? 1 : 2, tag, idOf(el), bits, role, wellFormed(name), wellFormed(value), wellFormed(extra),
             shadowKids < 0 ? -1 : 2 * shadowKids + (closed ? 1 : 0), kids);
    if (!skipped) pushKids(el, childrenHidden, textShown);
    if (shadow) pushKids(shadow, hidden, true);
  };

  if (this.nodeType === 9) {
    pushKids(this, false, false);
  } else if (this.nodeType === 11) {
    pushKids(this, !!this.host.closest('[aria-hidden="true"]'), true);
  } else {
    stack.push(this, !!(this.closest && this.closest('[aria-hidden="true"]')), true);
  }
  while (stack.length) {
    const textShown = stack.pop();
    const hidden = stack.pop();
    const node = stack.pop();
    if (node.nodeType === 3) out.push(3, idOf(node), wellFormed(node.nodeValue));
    else visit(node, hidden, textShown);
  }
  // Forget ids of nodes that are gone, now and then (the WeakRefs are dead; the map is ours).
  if (store.nodes.size > 4 * out.length + 10000) {
    for (const [id, ref] of store.nodes) if (!ref.deref()) store.nodes.delete(id);
  }
  // rescan: possible hosts new since the document's closed roots were looked for.
  const meta = { base: doc.baseURI || '', url: doc.URL || '', hosts, rescan: scanned ? hosts : 0, scanned };
  // One string crosses CDP far faster than an array of 100k values returned by value.
  return JSON.stringify([meta, out]);
}
