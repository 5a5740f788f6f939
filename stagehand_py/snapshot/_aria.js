// Our own ARIA role and accessible-name computation, the same on every page.
//
// Chrome only exposes its computation in-page behind a launch flag, and a page the user
// launched has no such flag; asking Chrome's accessibility tree over CDP instead is several
// times slower and speaks Chrome's internal roles (StaticText, LabelText). So we follow the
// rules that matter for actionable elements and text ourselves: the explicit role attribute,
// ARIA-in-HTML implicit roles, and accname 1.2 (aria-labelledby, aria-label, native labels,
// alt/title/placeholder, name from content, hidden subtrees). A test compares the result with
// Chrome's own computedRole/computedName on launched pages.
//
// An expression: evaluates to { roleOf(el), nameOf(el, role) }. Pure: reads the DOM only.
(() => {
  const ROLES = new Set(('alert alertdialog application article banner blockquote button caption cell checkbox code ' +
    'columnheader combobox comment complementary contentinfo definition deletion dialog directory document emphasis ' +
    'feed figure form generic grid gridcell group heading image img insertion link list listbox listitem log main ' +
    'mark marquee math menu menubar menuitem menuitemcheckbox menuitemradio meter navigation none note option ' +
    'paragraph presentation progressbar radio radiogroup region row rowgroup rowheader scrollbar search searchbox ' +
    'separator slider spinbutton status strong subscript superscript switch tab table tablist tabpanel term textbox ' +
    'time timer toolbar tooltip tree treegrid treeitem doc-abstract doc-acknowledgments doc-afterword doc-appendix ' +
    'doc-backlink doc-biblioentry doc-bibliography doc-biblioref doc-chapter doc-colophon doc-conclusion doc-cover ' +
    'doc-credit doc-credits doc-dedication doc-endnote doc-endnotes doc-epigraph doc-epilogue doc-errata doc-example ' +
    'doc-footnote doc-foreword doc-glossary doc-glossref doc-index doc-introduction doc-noteref doc-notice ' +
    'doc-pagebreak doc-pagelist doc-part doc-preface doc-prologue doc-pullquote doc-qna doc-subtitle doc-tip doc-toc').split(' '));
  // Roles whose name comes from their content when nothing else names them (accname 1.2 step 2F).
  const FROM_CONTENT = new Set(['', 'button', 'cell', 'checkbox', 'columnheader', 'gridcell', 'heading', 'link',
    'menuitem', 'menuitemcheckbox', 'menuitemradio', 'option', 'radio', 'rowheader', 'switch', 'tab',
    'tooltip', 'treeitem', 'caption', 'term', 'code', 'doc-backlink', 'doc-biblioref', 'doc-glossref', 'doc-noteref', 'emphasis', 'strong', 'deletion', 'insertion',
    'subscript', 'superscript', 'mark', 'time', 'comment']);
  // Roles that never take a name from anywhere (so a title on them does not show).
  const NAMELESS = new Set(['none', 'presentation', 'generic', 'paragraph', 'code', 'emphasis', 'strong', 'deletion',
    'insertion', 'subscript', 'superscript', 'mark', 'time', 'caption', 'definition', 'blockquote']);
  const SECTIONING = 'article, aside, main, nav, section';
  const GLOBAL_ARIA = ['aria-label', 'aria-labelledby', 'aria-describedby', 'aria-details', 'aria-live', 'aria-owns',
    'aria-controls', 'aria-keyshortcuts', 'aria-roledescription'];
  const TEXT_TYPES = new Set(['', 'text', 'email', 'tel', 'url']);
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const MAX_CONTENT_NAME = 600;

  const attr = (el, a) => el.getAttribute(a);
  const focusable = (el) => el.tabIndex >= 0 && el.getAttribute('tabindex') !== null;
  const hasGlobal = (el) => GLOBAL_ARIA.some((a) => el.hasAttribute(a));

  const inputRole = (el) => {
    const type = (attr(el, 'type') || '').trim().toLowerCase();
    const list = el.hasAttribute('list');
    switch (type) {
      case 'button': case 'submit': case 'reset': case 'image': case 'file': return 'button';
      case 'checkbox': return 'checkbox';
      case 'radio': return 'radio';
      case 'range': return 'slider';
      case 'number': return 'spinbutton';
      case 'search': return list ? 'combobox' : 'searchbox';
      case 'hidden': return 'none';
      case 'color': return 'button';
      default: return list ? 'combobox' : 'textbox';
    }
  };

  const implicitRole = (el) => {
    const tag = el.localName;
    switch (tag) {
      case 'a': case 'area': return el.hasAttribute('href') ? 'link' : 'generic';
      case 'article': return 'article';
      case 'aside': return 'complementary';
      case 'blockquote': return 'blockquote';
      case 'button': return 'button';
      case 'caption': return 'caption';
      case 'code': return 'code';
      case 'datalist': return 'listbox';
      case 'dd': return 'definition';
      case 'del': case 's': return 'deletion';
      case 'details': return 'group';
      case 'dfn': case 'dt': return 'term';
      case 'dialog': return 'dialog';
      case 'hgroup': return 'group';
      case 'em': return 'emphasis';
      case 'fieldset': case 'optgroup': case 'address': return 'group';
      case 'figure': return 'figure';
      case 'footer': return el.closest(SECTIONING) ? 'generic' : 'contentinfo';
      case 'header': return el.closest(SECTIONING) ? 'generic' : 'banner';
      case 'form': return 'form';
      case 'h1': case 'h2': case 'h3': case 'h4': case 'h5': case 'h6': return 'heading';
      case 'hr': return 'separator';
      case 'img': {
        const alt = attr(el, 'alt');
        if (alt !== null && alt === '' && !hasGlobal(el) && !focusable(el) && !attr(el, 'title')) return 'none';
        return 'image';
      }
      case 'input': return inputRole(el);
      case 'ins': return 'insertion';
      case 'iframe': case 'frame': return 'iframe';
      case 'li': return 'listitem';
      case 'main': return 'main';
      case 'mark': return 'mark';
      case 'menu': case 'ol': case 'ul': return 'list';
      case 'meter': return 'meter';
      case 'nav': return 'navigation';
      case 'option': return 'option';
      case 'output': return 'status';
      case 'p': return 'paragraph';
      case 'progress': return 'progressbar';
      case 'search': return 'search';
      case 'section': return hasName(el) ? 'region' : 'generic';
      case 'select': return el.multiple || el.size > 1 ? 'listbox' : 'combobox';
      case 'strong': case 'b': return tag === 'strong' ? 'strong' : 'generic';
      case 'sub': return 'subscript';
      case 'sup': return 'superscript';
      case 'summary': return 'button';
      case 'svg': return 'image';
      case 'path': case 'circle': case 'rect': case 'ellipse': case 'line': case 'polyline': case 'polygon': case 'use':
        // Chrome exposes a drawing's shapes (an outline keeps them only when they say something).
        return el.namespaceURI === SVG_NS ? 'graphics-symbol' : 'generic';
      case 'table': return isDataTable(el) ? 'table' : 'generic';
      case 'tbody': case 'thead': case 'tfoot': return inDataTable(el) ? 'rowgroup' : 'generic';
      case 'tr': return inDataTable(el) ? 'row' : 'generic';
      case 'td': {
        const table = el.closest('table');
        if (!inDataTable(el)) return '';  // a layout cell: no role, but named by its content
        return table && /^(grid|treegrid)$/.test(attr(table, 'role') || '') ? 'gridcell' : 'cell';
      }
      case 'th': return inDataTable(el) ? thRole(el) : '';
      case 'textarea': return 'textbox';
      case 'time': return 'time';
      default: return 'generic';
    }
  };

  // Tables used for layout are not tables to a reader (Chrome's data-table heuristics, the
  // signals that matter): a table is data when it says so (role, caption, header cells, column
  // groups, a summary, a border) or is long.
  const dataTables = new WeakMap();
  const isDataTable = (table) => {
    let known = dataTables.get(table);
    if (known === undefined) {
      const own = (sel) => Array.from(table.querySelectorAll(sel)).some((n) => n.closest('table') === table);
      known = !!attr(table, 'role') || table.hasAttribute('summary') || (+attr(table, 'border') > 0) ||
        own('caption, thead, tfoot, th, colgroup, col') || table.rows.length >= 20;
      dataTables.set(table, known);
    }
    return known;
  };
  const inDataTable = (el) => {
    const table = el.closest('table');
    return !table || isDataTable(table);
  };

  const thRole = (el) => {
    const scope = (attr(el, 'scope') || '').toLowerCase();
    if (scope === 'row' || scope === 'rowgroup') return 'rowheader';
    if (scope === 'col' || scope === 'colgroup') return 'columnheader';
    // No scope: a header in a row of data cells heads that row; otherwise its column.
    const row = el.parentElement;
    if (row && row.localName === 'tr') {
      for (let c = row.firstElementChild; c; c = c.nextElementSibling) if (c.localName === 'td') return 'rowheader';
    }
    return 'columnheader';
  };

  const hasName = (el) => !!((attr(el, 'aria-label') || '').trim() || (attr(el, 'aria-labelledby') || '').trim() || (attr(el, 'title') || '').trim());

  const roleOf = (el) => {
    const explicit = attr(el, 'role');
    if (explicit) {
      for (const token of explicit.trim().toLowerCase().split(/\s+/)) {
        if (!ROLES.has(token)) continue;
        // Presentational roles yield to focusability and global ARIA (the conflict rule).
        if ((token === 'none' || token === 'presentation') && (focusable(el) || hasGlobal(el))) break;
        return token === 'presentation' ? 'none' : token === 'img' ? 'image' : token;
      }
    }
    return implicitRole(el);
  };

  // --- names ------------------------------------------------------------------------------
  const isHidden = (el) => {
    if (el.hidden || attr(el, 'aria-hidden') === 'true') return true;
    const style = getComputedStyle(el);
    return style.display === 'none' || style.visibility === 'hidden' || style.visibility === 'collapse';
  };
  const INLINE = /^(inline|contents)/;
  const squash = (s) => s.replace(/[\s\u200b]+/g, ' ').trim();

  const controlValue = (el, role) => {
    if (role === 'textbox' || role === 'searchbox') return el.value || '';
    if (role === 'combobox' && el.localName === 'select') {
      const o = el.selectedOptions && el.selectedOptions[0];
      return o ? squash(o.label || o.text) : '';
    }
    if (role === 'combobox') return el.value !== undefined ? el.value : '';
    if (role === 'slider' || role === 'spinbutton' || role === 'progressbar' || role === 'meter') {
      return attr(el, 'aria-valuetext') || attr(el, 'aria-valuenow') || (el.value !== undefined ? String(el.value) : '');
    }
    return null;
  };

  // Text of a node's content for name-from-content (step 2F), recursing with the rules of 2B-2G.
  const contentText = (node, visited, inside) => {
    let out = '';
    const shadow = node.nodeType === 1 ? node.shadowRoot : null;
    const kids = node.nodeType === 1 && node.localName === 'slot' && node.assignedNodes().length
      ? node.assignedNodes() : shadow ? [shadow] : node.childNodes;
    for (const child of kids) {
      // Like Chrome, stop gathering a name from content after a few hundred characters: the
      // text beyond stays in the outline as text lines of its own.
      if (out.length > MAX_CONTENT_NAME) break;
      if (child.nodeType === 3) { out += child.nodeValue; continue; }
      if (child.nodeType === 11) { out += contentText(child, visited, inside); continue; }
      if (child.nodeType !== 1) continue;
      const tag = child.localName;
      if (tag === 'script' || tag === 'style' || tag === 'template' || tag === 'noscript') continue;
      if (isHidden(child)) continue;
      const text = nameOfNode(child, visited, true, inside);
      const block = !INLINE.test(getComputedStyle(child).display) || tag === 'br';
      out += block ? ' ' + text + ' ' : text;
    }
    return out;
  };

  // accname 1.2 for `el`; `traversal` when reached from an ancestor's content or a labelledby.
  const nameOfNode = (el, visited, traversal, inside) => {
    if (visited.has(el)) return '';
    visited.add(el);
    const role = roleOf(el);
    // 2B: aria-labelledby (not while already following one).
    if (!inside) {
      const ids = (attr(el, 'aria-labelledby') || '').trim();
      if (ids) {
        const root = el.getRootNode();
        const parts = [];
        for (const id of ids.split(/\s+/)) {
          const ref = root.getElementById ? root.getElementById(id) : null;
          if (ref) parts.push(squash(nameOfNode(ref, visited, true, true) || ''));
        }
        const joined = squash(parts.join(' '));
        if (joined) return joined;
      }
    }
    // 2C (embedded control inside a label/name being computed): its value.
    if (traversal && role !== 'button') {
      const value = controlValue(el, role);
      if (value !== null && el !== inside) return value;
    }
    // 2D: aria-label.
    const label = (attr(el, 'aria-label') || '').trim();
    if (label) return label;
    // 2E: native label.
    if (role !== 'none' && role !== 'generic' || el.localName === 'label') {
      const native = nativeName(el, role, visited);
      if (native) return native;
    }
    // 2F: from content, for roles that allow it and for everything reached while following
    // content. Inside content, a whitespace-only child still separates its neighbours.
    let spaces = '';
    if (traversal || FROM_CONTENT.has(role)) {
      const text = contentText(el, visited, inside || null);
      if (text.trim()) return text;
      spaces = text ? ' ' : '';
    }
    // 2I: tooltip.
    return (attr(el, 'title') || '').trim() || spaces;
  };

  const labelsText = (el, visited) => {
    const labels = el.labels;
    if (!labels || !labels.length) return '';
    return squash(Array.from(labels, (l) => contentText(l, visited, el)).join(' '));
  };

  const nativeName = (el, role, visited) => {
    const tag = el.localName;
    if (tag === 'input') {
      const type = (attr(el, 'type') || '').trim().toLowerCase();
      if (type === 'hidden') return '';
      if (type === 'submit' || type === 'reset' || type === 'button') {
        const v = attr(el, 'value');
        if (v !== null && v.trim()) return v.trim();
        const fromLabel = labelsText(el, visited);
        if (fromLabel) return fromLabel;
        return type === 'submit' ? 'Submit' : type === 'reset' ? 'Reset' : (attr(el, 'title') || '').trim();
      }
      if (type === 'file') {
        // Chrome's name for a file chooser: its label (or the button's text), then what is chosen.
        const files = el.files || [];
        const chosen = files.length === 0 ? 'No file chosen'
          : files.length === 1 ? files[0].name : files.length + ' files';
        return (labelsText(el, visited) || (el.multiple ? 'Choose Files' : 'Choose File')) + ': ' + chosen;
      }
      if (type === 'image') {
        return (attr(el, 'alt') || '').trim() || (attr(el, 'value') || '').trim() || (attr(el, 'title') || '').trim() || 'Submit';
      }
      const fromLabel = labelsText(el, visited);
      if (fromLabel) return fromLabel;
      const title = (attr(el, 'title') || '').trim();
      if (title) return title;
      if (TEXT_TYPES.has(type) || type === 'search' || type === 'number' || type === 'password') return (attr(el, 'placeholder') || '').trim();
      return '';
    }
    if (tag === 'textarea' || tag === 'select' || tag === 'meter' || tag === 'progress' || tag === 'output') {
      const fromLabel = labelsText(el, visited);
      if (fromLabel) return fromLabel;
      const title = (attr(el, 'title') || '').trim();
      if (title) return title;
      return tag === 'textarea' ? (attr(el, 'placeholder') || '').trim() : '';
    }
    if (tag === 'button') {
      const fromLabel = labelsText(el, visited);
      if (fromLabel) return fromLabel;
      return '';
    }
    if (tag === 'img' || tag === 'area') return (attr(el, 'alt') || '').trim();
    if (tag === 'iframe' || tag === 'frame') return '';  // falls through to its title
    if (tag === 'fieldset') {
      const legend = Array.from(el.children).find((c) => c.localName === 'legend');
      return legend ? squash(contentText(legend, visited, null)) : '';
    }
    if (tag === 'table') {
      const caption = Array.from(el.children).find((c) => c.localName === 'caption');
      return caption ? squash(contentText(caption, visited, null)) : '';
    }
    if (tag === 'svg') {
      const title = Array.from(el.children).find((c) => c.localName === 'title');
      return title ? squash(title.textContent || '') : '';
    }
    return '';
  };

  const nameOf = (el, role) => {
    if (NAMELESS.has(role) && !(attr(el, 'aria-label') || attr(el, 'aria-labelledby'))) return '';
    return squash(nameOfNode(el, new Set(), false, null));
  };

  return { roleOf, nameOf };
})()
