import { docxText } from './docx';
import { type DocumentKind } from './kinds';
import { pdfText } from './pdf';
import { checkBytes } from './sniff';
import { csvText, htmlText, markdownText } from './text';

export { ALLOWED_CONTENT_TYPES, declaredKind, type DocumentKind } from './kinds';
export { ExtractionRefused, type RefusalReason } from './refused';

export interface Extracted {
  kind: DocumentKind;
  text: string;
  wordCount: number;
}

export interface ExtractLimits {
  /** Most bytes a docx may inflate to, all entries together (default 50 MiB). */
  maxUncompressedBytes?: number;
  /** Most entries in a docx's zip (default 1000). */
  maxEntries?: number;
  /** Largest uncompressed:compressed ratio of a docx entry over 1 MiB (default 100). */
  maxRatio?: number;
  /** Text kept (default 2,000,000 characters); the rest is cut off, not refused: a long document
   *  is still useful for its beginning, and the store and the prompts need a bound. */
  maxTextChars?: number;
}

/**
 * The plain text of an uploaded document. The bytes are checked against the declared kind first
 * (see `checkBytes`), so a parser only ever sees the format it was written for; refusals are
 * `ExtractionRefused`. An extraction that finds no words is not a refusal (wordCount 0).
 */
export async function extractText(bytes: Buffer, kind: DocumentKind, limits: ExtractLimits = {}): Promise<Extracted> {
  const maxTextChars = limits.maxTextChars ?? 2_000_000;
  const source = checkBytes(bytes, kind);
  let text: string;
  if (kind === 'pdf') text = await pdfText(bytes, maxTextChars);
  else if (kind === 'docx') {
    text = await docxText(bytes, {
      maxUncompressedBytes: limits.maxUncompressedBytes ?? 50 * 1024 * 1024,
      maxEntries: limits.maxEntries ?? 1000,
      maxRatio: limits.maxRatio ?? 100,
    });
  } else if (kind === 'md') text = markdownText(source!);
  else if (kind === 'csv') text = csvText(source!);
  else if (kind === 'html') text = htmlText(source!);
  else text = source!.trim();
  text = truncate(text, maxTextChars);
  return { kind, text, wordCount: countWords(text) };
}

/** Cut at `max` UTF-16 units without leaving half a surrogate pair at the end. */
function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  const code = text.charCodeAt(max - 1);
  return text.slice(0, code >= 0xd800 && code <= 0xdbff ? max - 1 : max);
}

/** Words are runs of letters and digits in any script (combining marks stay inside a word, so
 *  Devanagari or Thai is not split at every vowel sign); a run of CJK ideographs counts as one. */
export function countWords(text: string): number {
  let n = 0;
  for (const _ of text.matchAll(/[\p{L}\p{N}][\p{L}\p{M}\p{N}]*/gu)) n++;
  return n;
}
