// Records closed shadow roots so the resolver (_resolver.js) can walk into them.
//
// A closed root is invisible to page scripts (element.shadowRoot is null), but the snapshot
// sees it through CDP and emits paths that cross it with a `//` hop. We patch
// Element.prototype.attachShadow to keep each root in a WeakMap (no leak: entries die with
// their hosts) stored under a non-enumerable, hard-to-collide global property.
//
// Installed as an init script (runs before any page script in every new document and frame)
// and evaluated once in the frames that already exist. Roots attached before it ran, and
// declarative shadow roots (<template shadowrootmode="closed">, which never call
// attachShadow), cannot be recorded. Idempotent: the property doubles as the "installed"
// marker, so evaluating this twice never wraps attachShadow twice.
(() => {
  // Must equal the key in _resolver.js (a test pins it).
  const KEY = "__stagehand_py_closed_shadow_roots_v1__";
  if (Object.prototype.hasOwnProperty.call(globalThis, KEY)) return;
  if (typeof Element === "undefined" || typeof Element.prototype.attachShadow !== "function") return;
  const roots = new WeakMap();
  Object.defineProperty(globalThis, KEY, {
    value: roots,
    enumerable: false,
    configurable: false,
    writable: false,
  });
  const descriptor = Object.getOwnPropertyDescriptor(Element.prototype, "attachShadow");
  const original = descriptor.value;
  // A method-shorthand keeps the name "attachShadow" and is not constructible, like the native.
  const patched = {
    attachShadow(init) {
      const root = original.call(this, init);
      if (init && init.mode === "closed") roots.set(this, root);
      return root;
    },
  }.attachShadow;
  Object.defineProperty(Element.prototype, "attachShadow", { ...descriptor, value: patched });
})();
