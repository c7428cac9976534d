// The runbook viewer: runbook.html?doc=docs/operations.md#callchargesloburn shows that section of
// the project's Markdown docs (served beside the page: docs/ links to the repository's docs/).
// A deliberately small Markdown reader: headings, paragraphs, lists, tables, fenced code, inline
// code, bold, emphasis and links. Everything is built as DOM nodes (never parsed as HTML).
'use strict';

(function () {
  const params = new URLSearchParams(location.search);
  const doc = params.get('doc') || '';
  const main = document.getElementById('runbook');
  const banner = document.getElementById('error-banner');

  const DOC_PATH = /^docs\/(?:[A-Za-z0-9_-]+\/)*[A-Za-z0-9_.-]+\.md$/;

  /** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
  const slug = (text) =>
    text
      .trim()
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');

  function el(tag, attrs, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) if (v !== undefined && v !== null) e.setAttribute(k, String(v));
    for (const c of children) if (c !== null && c !== undefined) e.append(c);
    return e;
  }

  /** Where a link of the document leads: another doc through this viewer, the web as is, else nowhere. */
  function linkTarget(href) {
    let u;
    try {
      u = new URL(href, `https://docs.invalid/${doc}`);
    } catch {
      return null;
    }
    if (u.host !== 'docs.invalid') return u.protocol === 'http:' || u.protocol === 'https:' ? u.href : null;
    const p = u.pathname.replace(/^\//, '');
    if (p === doc && u.hash) return u.hash;
    return DOC_PATH.test(p) ? `runbook.html?doc=${encodeURIComponent(p)}${u.hash}` : null;
  }

  function inline(text) {
    const out = [];
    const re =
      /`([^`]+)`|\*\*(.+?)\*\*|\[([^\]]+)\]\(([^)\s]+)\)|(?<![\w*])\*([^*\s][^*]*?)\*(?![\w*])|(?<![\w_])_([^_\s][^_]*?)_(?![\w_])/g;
    let at = 0;
    for (const m of text.matchAll(re)) {
      if (m.index > at) out.push(text.slice(at, m.index));
      if (m[1] !== undefined) out.push(el('code', null, m[1]));
      else if (m[2] !== undefined) out.push(el('strong', null, ...inline(m[2])));
      else if (m[3] !== undefined) {
        const href = linkTarget(m[4]);
        out.push(href ? el('a', { href }, ...inline(m[3])) : el('span', null, ...inline(m[3])));
      } else out.push(el('em', null, ...inline(m[5] ?? m[6])));
      at = m.index + m[0].length;
    }
    if (at < text.length) out.push(text.slice(at));
    return out;
  }

  const LIST_ITEM = /^(\s*)([-*+]|\d+[.)])\s+(.*)$/;
  const TABLE_ROW = /^\s*\|/;
  const FENCE = /^\s*(```|~~~)/;
  const HEADING = /^(#{1,6})\s+(.*?)\s*#*\s*$/;
  const startsBlock = (l) => FENCE.test(l) || HEADING.test(l) || TABLE_ROW.test(l) || LIST_ITEM.test(l);

  function blocks(md) {
    const lines = md.replace(/\r\n?/g, '\n').split('\n');
    const out = [];
    for (let i = 0; i < lines.length;) {
      const line = lines[i];
      if (FENCE.test(line)) {
        const fence = line.trim().slice(0, 3);
        const code = [];
        for (i++; i < lines.length && !lines[i].trim().startsWith(fence); i++) code.push(lines[i]);
        i++;
        out.push({ type: 'code', text: code.join('\n') });
      } else if (HEADING.test(line)) {
        const [, hashes, text] = line.match(HEADING);
        out.push({ type: 'heading', level: hashes.length, text });
        i++;
      } else if (TABLE_ROW.test(line)) {
        const rows = [];
        for (; i < lines.length && TABLE_ROW.test(lines[i]); i++) {
          const cells = lines[i]
            .trim()
            .replace(/^\|/, '')
            .replace(/\|$/, '')
            .split(/(?<!\\)\|/)
            .map((c) => c.trim().replace(/\\\|/g, '|'));
          if (!cells.every((c) => /^:?-+:?$/.test(c))) rows.push(cells);
        }
        out.push({ type: 'table', rows });
      } else if (LIST_ITEM.test(line)) {
        const items = [];
        const ordered = /\d/.test(line.match(LIST_ITEM)[2]);
        for (; i < lines.length; i++) {
          const m = lines[i].match(LIST_ITEM);
          if (m) items.push(m[3]);
          else if (lines[i].trim() !== '' && /^\s/.test(lines[i]) && items.length > 0)
            items[items.length - 1] += ` ${lines[i].trim()}`;
          else break;
        }
        out.push({ type: 'list', ordered, items });
      } else if (line.trim() === '') i++;
      else {
        const para = [];
        for (; i < lines.length && lines[i].trim() !== '' && !startsBlock(lines[i]); i++) para.push(lines[i].trim());
        out.push({ type: 'para', text: para.join(' ') });
      }
    }
    return out;
  }

  // The section's own heading becomes the page's h1, its subsections follow from there.
  function render(b, shift) {
    switch (b.type) {
      case 'heading':
        return el(`h${Math.min(6, Math.max(1, b.level - shift))}`, { id: slug(b.text) }, ...inline(b.text));
      case 'code':
        return el('pre', null, el('code', null, b.text));
      case 'list':
        return el(b.ordered ? 'ol' : 'ul', null, ...b.items.map((t) => el('li', null, ...inline(t))));
      case 'table': {
        const [head, ...rows] = b.rows;
        return el(
          'table',
          null,
          el('thead', null, el('tr', null, ...(head || []).map((c) => el('th', { scope: 'col' }, ...inline(c))))),
          el('tbody', null, ...rows.map((r) => el('tr', null, ...r.map((c) => el('td', null, ...inline(c)))))),
        );
      }
      default:
        return el('p', null, ...inline(b.text));
    }
  }

  async function show() {
    const anchor = decodeURIComponent(location.hash.replace(/^#/, ''));
    if (!DOC_PATH.test(doc)) throw new Error(`"${doc}" is not a document of docs/`);
    const res = await fetch(doc, { cache: 'no-store' });
    if (!res.ok) throw new Error(`${doc}: HTTP ${res.status}`);
    const all = blocks(await res.text());
    let part = all;
    let note = null;
    if (anchor) {
      const start = all.findIndex((b) => b.type === 'heading' && slug(b.text) === anchor);
      if (start < 0) note = `${doc} has no section #${anchor}; the whole document follows.`;
      else {
        const level = all[start].level;
        const end = all.findIndex((b, j) => j > start && b.type === 'heading' && b.level <= level);
        part = all.slice(start, end < 0 ? all.length : end);
      }
    }
    const title = part.find((b) => b.type === 'heading');
    document.title = `${title ? title.text : doc} · runbook`;
    const shift = title ? title.level - 1 : 0;
    main.replaceChildren(
      el('p', { class: 'meta' }, `From ${doc}`),
      ...(note ? [el('p', { class: 'banner' }, note)] : []),
      ...part.map((b) => render(b, shift)),
    );
    const whole = document.getElementById('whole');
    whole.href = `runbook.html?doc=${encodeURIComponent(doc)}`;
    whole.hidden = !anchor;
  }

  const showOrSay = () =>
    show().then(
      () => (banner.hidden = true),
      (err) => {
        banner.textContent = `Could not show the runbook: ${err.message}`;
        banner.hidden = false;
        main.replaceChildren();
      },
    );
  // A link to another section of the same document changes only the fragment.
  window.addEventListener('hashchange', showOrSay);
  showOrSay();
})();
