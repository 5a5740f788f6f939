// In-page half of the snapshot: called with `this` = a Document, a (closed) ShadowRoot or an
// Element. Closed shadow roots inside are not entered: page script cannot see them, so the
// Python side walks each one in a call of its own, from the root object CDP gives it.
//
// Returns (as a JSON string) a flat array, 6 values per element, for every element in this order: the
// element, its open shadow root's children, then its light children (iframes are not entered: each
// document gets its own call). The Python side walks the CDP DOM tree in the same order and
// checks tag names, so both halves line up without any marker in the page.
//
// Per element: localName, bits, role, name, value, text indices (usually null).
// role/name come from our own ARIA computation (_aria.js, inlined as ARIA below), the same on
// every page whoever launched its browser.
function () {
  const VISIBLE = 1, CHECKED = 2, MIXED = 4, SELECTED = 8, DISABLED = 16, EXPANDED = 32,
        COLLAPSED = 64, SCROLLABLE = 128, FILLED = 256, REQUIRED = 512, FOCUSED = 1024,
        FALLBACK_UNUSED = 2048;
  const ARIA = __ARIA__;
  const out = [];
  const active = (this.ownerDocument || this).activeElement;
  const scrollingElement = (this.ownerDocument || this).scrollingElement;
  const TEXT_INPUT = /^(text|email|search|url|tel|number|date|datetime-local|month|week|time|color|range)$/;
  const CHROME_BLANK = /^[\t\n\v\f\r \u1680\u2000-\u200a\u2028\u205f\u3000]*$/;
  const XPATH_NONBLANK = /[^ \t\n\r]/;
  const SKIP = new Set(['head', 'script', 'style', 'noscript', 'template', 'meta', 'link', 'title', 'base']);

  const visit = (el, hidden) => {
    const tag = el.localName;
    let bits = 0, role = null, name = null, value = null;
    if (el.getAttribute('aria-hidden') === 'true' || el.inert) hidden = true;
    if (!hidden && !SKIP.has(tag)) {
      let shown = el.checkVisibility({ visibilityProperty: true });
      if (!shown) {
        // No box of its own, but its children render: <option> inside a closed <select>,
        // display:contents wrappers.
        if (tag === 'option' || tag === 'optgroup') shown = !!el.closest('select');
        else if (getComputedStyle(el).display === 'contents') shown = true;
      }
      if (shown) {
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
        if (el === active && el !== (el.ownerDocument && el.ownerDocument.body)) bits |= FOCUSED;
        if (tag === 'input') {
          const type = (el.type || 'text').toLowerCase();
          // A password's value never leaves the page: only the fact that it is filled.
          if (type === 'password') { if (el.value) bits |= FILLED; }
          else if (TEXT_INPUT.test(type) && el.value) value = el.value;
        } else if (tag === 'textarea') {
          if (el.value) value = el.value;
        } else if (tag === 'select') {
          const labels = Array.from(el.selectedOptions || [], (o) => o.label || o.text);
          if (labels.length) value = labels.join(', ');
        }
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
      }
    }
    if (value !== null && value.length > 300) value = value.slice(0, 300) + '…';
    // CDP leaves out text nodes that are blank to Chrome (which counts \v, \f and Unicode
    // spaces such as U+2003 as blank); XPath's normalize-space() does not. Where a child is
    // blank to one and not the other, give the true XPath index of each text child CDP kept.
    let textIndex = null;
    for (let c = el.firstChild; c; c = c.nextSibling) {
      if (c.nodeType === 3 && CHROME_BLANK.test(c.nodeValue) && XPATH_NONBLANK.test(c.nodeValue)) {
        textIndex = [];
        let k = 0;
        for (let t = el.firstChild; t; t = t.nextSibling) {
          if (t.nodeType !== 3) continue;
          if (XPATH_NONBLANK.test(t.nodeValue)) k++;
          if (!CHROME_BLANK.test(t.nodeValue)) textIndex.push(k);
        }
        break;
      }
    }
    // A <slot>'s own children are fallback content, not rendered once something is slotted.
    let childrenHidden = hidden;
    if (tag === 'slot' && el.assignedNodes().length) { bits |= FALLBACK_UNUSED; childrenHidden = true; }
    out.push(tag, bits, role, name, value, textIndex);
    // Children go on the stack in reverse so they come off in order: open-shadow children
    // first, then light children. An explicit stack: a DOM 10,000 levels deep must not
    // overflow the call stack.
    for (let c = el.lastElementChild; c; c = c.previousElementSibling) stack.push(c, childrenHidden);
    const shadow = el.shadowRoot;
    if (shadow) for (let c = shadow.lastElementChild; c; c = c.previousElementSibling) stack.push(c, hidden);
  };

  const stack = [];
  const walk = () => {
    while (stack.length) {
      const hidden = stack.pop();
      visit(stack.pop(), hidden);
    }
  };
  const pushAll = (parent, hidden) => {
    for (let c = parent.lastElementChild; c; c = c.previousElementSibling) stack.push(c, hidden);
  };
  if (this.nodeType === 9) {
    pushAll(this, false);
  } else if (this.nodeType === 11) {
    pushAll(this, !!this.host.closest('[aria-hidden="true"]'));
  } else {
    stack.push(this, !!(this.closest && this.closest('[aria-hidden="true"]')));
  }
  walk();
  // One string crosses CDP far faster than an array of 100k values returned by value.
  return JSON.stringify(out);
}
