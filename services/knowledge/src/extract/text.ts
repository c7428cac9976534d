import { parse } from 'csv-parse/sync';
import { compile } from 'html-to-text';
import MarkdownIt from 'markdown-it';
import { ExtractionRefused } from './refused';

// html: true so raw HTML in Markdown arrives as html tokens (dropped or converted) rather than as
// literal `<tags>` in the text.
const markdown = new MarkdownIt({ html: true });

/** Markdown to text: the parser's text tokens (so code, link text and image alt text stay, syntax goes). */
export function markdownText(source: string): string {
  const inline = (tokens: MarkdownIt.Token[]): string =>
    tokens
      .map((t) => {
        if (t.type === 'softbreak' || t.type === 'hardbreak') return '\n';
        if (t.type === 'text' || t.type === 'code_inline') return t.content;
        if (t.type === 'image') return inline(t.children ?? []);
        return ''; // markup (em_open, link_open, html_inline tags ...)
      })
      .join('');
  const blocks: string[] = [];
  for (const t of markdown.parse(source, {})) {
    if (t.type === 'inline') blocks.push(inline(t.children ?? []));
    else if (t.type === 'fence' || t.type === 'code_block') blocks.push(t.content);
    else if (t.type === 'html_block') blocks.push(htmlText(t.content));
  }
  return blocks
    .map((b) => b.trim())
    .filter(Boolean)
    .join('\n');
}

/** CSV to text: one line per record, cells joined by spaces. Malformed CSV (an unclosed quote ...) is
 *  refused rather than guessed at. Ragged rows are fine: knowledge files are hand-made. */
export function csvText(source: string): string {
  let rows: string[][];
  try {
    rows = parse(source, { relax_column_count: true, skip_empty_lines: true });
  } catch (e) {
    throw new ExtractionRefused('unreadable', `the CSV cannot be parsed: ${(e as Error).message}`);
  }
  return rows
    .map((r) =>
      r
        .map((c) => c.trim())
        .filter(Boolean)
        .join(' '),
    )
    .filter(Boolean)
    .join('\n');
}

const HEADINGS = ['h1', 'h2', 'h3', 'h4', 'h5', 'h6'].map((selector) => ({ selector, options: { uppercase: false } }));

/** HTML to text: no line wrapping, no link targets or images, headings as written; script, style and
 *  template contents are not text. html-to-text's own limit cuts input past 16 MiB (with a warning). */
const toText = compile({
  wordwrap: false,
  selectors: [
    ...HEADINGS,
    { selector: 'a', options: { ignoreHref: true } },
    { selector: 'img', format: 'skip' },
    { selector: 'script', format: 'skip' },
    { selector: 'style', format: 'skip' },
    { selector: 'template', format: 'skip' },
  ],
});
export const htmlText = (source: string): string => toText(source).trim();
