// Scrolls for the scroll_to / scroll_by / next_chunk / prev_chunk methods.
//
// Evaluated with ElementHandle.evaluate(el, arg). Which box scrolls:
//   - the document's scrolling element (the page, or the frame's page) when the target is
//     <html> or <body>;
//   - otherwise the target itself when it can scroll, else its nearest scrollable ancestor
//     (crossing shadow boundaries), else the page. A model often names the list item it wants
//     to see rather than the list that scrolls; scrolling a box that cannot move would be a
//     silent no-op.
// Scrolling is instant (behavior: "instant") so a page's `scroll-behavior: smooth` does not
// leave the position mid-animation when the action returns.
//
// arg: {op: "to", percent} | {op: "by", dx, dy} | {op: "chunk", direction: 1 | -1}
// returns {x, y, target} (the new offsets, and "page" or "element" for logs).
(el, arg) => {
  const doc = el.ownerDocument;
  const page = doc.scrollingElement || doc.documentElement;

  const canScroll = (node) => {
    if (!(node instanceof Element)) return false;
    const style = node.ownerDocument.defaultView.getComputedStyle(node);
    const scrollable = (overflow) => overflow === "auto" || overflow === "scroll" || overflow === "overlay";
    const vertical = scrollable(style.overflowY) && node.scrollHeight > node.clientHeight;
    const horizontal = scrollable(style.overflowX) && node.scrollWidth > node.clientWidth;
    return vertical || horizontal;
  };

  const pick = () => {
    if (el === doc.documentElement || el === doc.body) return page;
    for (let node = el; node; ) {
      if (node === doc.documentElement || node === doc.body) return page;
      if (canScroll(node)) return node;
      if (node.parentElement) node = node.parentElement;
      else if (node.parentNode && node.parentNode.host) node = node.parentNode.host;
      else node = null;
    }
    return page;
  };

  const box = pick();
  const isPage = box === page;
  const viewHeight = isPage ? doc.defaultView.innerHeight : box.clientHeight;

  if (arg.op === "to") {
    const maxTop = Math.max(0, box.scrollHeight - viewHeight);
    box.scrollTo({ top: (maxTop * arg.percent) / 100, left: box.scrollLeft, behavior: "instant" });
  } else if (arg.op === "by") {
    box.scrollBy({ left: arg.dx, top: arg.dy, behavior: "instant" });
  } else if (arg.op === "chunk") {
    box.scrollBy({ left: 0, top: arg.direction * viewHeight, behavior: "instant" });
  } else {
    throw new Error("unknown scroll op " + arg.op);
  }
  return { x: box.scrollLeft, y: box.scrollTop, target: isPage ? "page" : "element" };
}
