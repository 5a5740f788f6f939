// Resolves one frame-segment of a selector inside the document it is evaluated in.
//
// Evaluated by Python (stagehand_py/_actions/_resolve.py) with Frame.evaluate_handle; it returns
// the element on success (an ElementHandle on the Python side) and a plain failure object
// otherwise, so a successful resolution costs exactly one round trip per frame.
//
// arg.mode === "canonical": arg.steps is a list of {name, index, text, nonblank, shadow} from
// the snapshot's canonical xpath (already split at iframe hops by Python). Each step picks the
// index-th (1-based) child element whose local name equals `name` (case-insensitive, so an
// svg `foreignObject` matches either spelling); `text: true` picks the index-th text node and
// yields its parent element (`nonblank: true` counts only text nodes that are not blank);
// `shadow: true` means the step is looked up inside the previous
// element's shadow root (open, or closed and recorded by _shadow_init.js).
//
// It runs in the page's own world, where page scripts can override every DOM getter it reads (and
// pre-define the closed-root record), so Python never acts on what it returns: it only explains
// which step failed (Playwright's utility world resolves the element, _closed_roots.py opens
// closed roots to that world over DevTools).
(arg) => {
  // Must equal the key in _shadow_init.js (a test pins it).
  const KEY = "__stagehand_py_closed_shadow_roots_v1__";

  const toElement = (node) => {
    if (!node) return null;
    if (node.nodeType === Node.ELEMENT_NODE) return node;
    if (node.nodeType === Node.ATTRIBUTE_NODE) return node.ownerElement;
    const parent = node.parentNode;
    if (!parent) return null;
    if (parent.nodeType === Node.ELEMENT_NODE) return parent;
    // A text node directly under a shadow root: act on its host.
    if (parent.nodeType === Node.DOCUMENT_FRAGMENT_NODE && parent.host) return parent.host;
    return null;
  };

  const store = Object.prototype.hasOwnProperty.call(globalThis, KEY) ? globalThis[KEY] : null;
  let current = document;
  for (let i = 0; i < arg.steps.length; i++) {
    const step = arg.steps[i];
    let parent = current;
    if (step.shadow) {
      const root = current.shadowRoot || (store ? store.get(current) : undefined);
      if (!root) return { failure: "no-shadow-root", step: i, recorder: store !== null };
      parent = root;
    }
    if (step.text) {
      let seen = 0;
      for (const child of parent.childNodes) {
        const isText = child.nodeType === Node.TEXT_NODE || child.nodeType === Node.CDATA_SECTION_NODE;
        // text()[normalize-space()][n] counts only non-blank text nodes (same test as the snapshot).
        // Blank in XPath's sense (normalize-space): only space, tab, CR and LF; not NBSP.
        if (isText && (!step.nonblank || /[^ \t\n\r]/.test(child.nodeValue))) {
          seen += 1;
          if (seen === step.index) {
            const el = toElement(child);
            return el ? el : { failure: "not-element", step: i };
          }
        }
      }
      return { failure: "missing", step: i, available: seen };
    }
    let seen = 0;
    let found = null;
    for (const child of parent.children) {
      if (child.localName.toLowerCase() === step.name) {
        seen += 1;
        if (seen === step.index) {
          found = child;
          break;
        }
      }
    }
    if (!found) return { failure: "missing", step: i, available: seen };
    current = found;
  }
  if (current === document) return { failure: "none" };
  return current;
}
