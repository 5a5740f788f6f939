() => {
  // Runs in the library's isolated world: the DOM is the page's, every built-in is ours, so a
  // page that overrides TreeWalker, Range or getBoundingClientRect in its own world changes nothing.
  // One frame's document (each frame is walked in its own world, iframes not entered here).
  // Answer: {dpr, sx, sy, runs: [[text, group, [[x, y, w, h], ...]], ...]}, boxes in CSS pixels of
  // this frame's viewport. A group is the text of one block (the nearest ancestor that is not
  // inline), so a value split across <b>, <span>... is found in the block's joined text.
  const runs = [];
  const groups = new Map();
  let nextGroup = 0;
  const boxes = (list) => Array.from(list, (r) => [r.left, r.top, r.width, r.height].map(Math.round))
    .filter((b) => b[2] > 0 && b[3] > 0);
  const groupOf = (element) => {
    let node = element;
    while (node) {
      if (groups.has(node)) return groups.get(node);
      const display = getComputedStyle(node).display;
      if (!display.startsWith("inline") && display !== "contents") break;
      node = node.parentElement || (node.parentNode && node.parentNode.host) || null;
    }
    const key = node || element;
    if (!groups.has(key)) groups.set(key, nextGroup++);
    return groups.get(key);
  };
  const walk = (root) => {
    const walker = document.createTreeWalker(root, 1 | 4);  // elements and text
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      if (node.nodeType === 3) {
        if (!node.data.trim() || !node.parentElement) continue;
        const range = document.createRange();
        range.selectNodeContents(node);
        const rects = boxes(range.getClientRects());
        if (rects.length) runs.push([node.data, groupOf(node.parentElement), rects]);
        continue;
      }
      const tag = node.localName;
      // Text an element shows that is no text node: a field's value (a button's label too; the
      // field mask covers these as well, this copy cannot be removed by the page), an empty
      // field's placeholder, a broken image's alt. A title shows only as a tooltip, never in a
      // screenshot, and is not looked at.
      const field = tag === "input" || tag === "textarea";
      for (const shown of field ? [node.value, node.getAttribute("placeholder")] : tag === "img" ? [node.getAttribute("alt")] : []) {
        if (!shown || !shown.trim()) continue;
        const rects = boxes(node.getClientRects());
        if (rects.length) runs.push([shown, nextGroup++, rects]);
      }
      if (node.shadowRoot) walk(node.shadowRoot);  // open roots only
    }
  };
  if (document.documentElement) walk(document.documentElement);
  // A string: one JSON text crosses DevTools far faster than a by-value object tree.
  return JSON.stringify({ dpr: window.devicePixelRatio, sx: window.scrollX, sy: window.scrollY, runs });
}
