import { ExtractionRefused } from './refused';

export type DocumentKind = 'txt' | 'md' | 'csv' | 'html' | 'pdf' | 'docx';

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';
const BY_CONTENT_TYPE: Readonly<Record<string, DocumentKind>> = {
  'text/plain': 'txt',
  'text/markdown': 'md',
  'text/x-markdown': 'md',
  'text/csv': 'csv',
  'text/html': 'html',
  'application/pdf': 'pdf',
  [DOCX]: 'docx',
};
const BY_EXTENSION: Readonly<Record<string, DocumentKind>> = {
  txt: 'txt',
  md: 'md',
  markdown: 'md',
  csv: 'csv',
  html: 'html',
  htm: 'html',
  pdf: 'pdf',
  docx: 'docx',
};
const TEXT_KINDS: ReadonlySet<DocumentKind> = new Set(['txt', 'md', 'csv', 'html']);

/** The content types accepted (parameters such as `; charset=utf-8` aside). `application/octet-stream`
 *  and an empty type are accepted too, but only as "see the extension". */
export const ALLOWED_CONTENT_TYPES: readonly string[] = Object.freeze(Object.keys(BY_CONTENT_TYPE));

export const isTextKind = (kind: DocumentKind): boolean => TEXT_KINDS.has(kind);

/**
 * Which kind a file is declared as, from its name's extension and its declared content type.
 * `application/octet-stream` and an empty type defer to the extension; a name without an extension
 * defers to the type. `text/plain` is accepted for any text kind's extension (browsers and operating
 * systems that do not know `.md` or `.csv` send it); any other disagreement is refused, and so is an
 * extension or type outside the list. Only a declaration: `extractText` checks the bytes.
 */
export function declaredKind(fileName: string, contentType: string | undefined): DocumentKind {
  const base = fileName.trim().split(/[\\/]/).pop() ?? '';
  const dot = base.lastIndexOf('.');
  const ext = dot > 0 ? base.slice(dot + 1).toLowerCase() : '';
  const type = (contentType ?? '').split(';')[0]!.trim().toLowerCase();
  const byExt = ext ? BY_EXTENSION[ext] : undefined;
  if (ext && !byExt) throw new ExtractionRefused('unsupported_type', `files ending .${ext} are not accepted`);
  if (type === '' || type === 'application/octet-stream') {
    if (byExt) return byExt;
    throw new ExtractionRefused(
      'unsupported_type',
      'the file type cannot be told: give a known extension or content type',
    );
  }
  const byType = BY_CONTENT_TYPE[type];
  if (!byType) throw new ExtractionRefused('unsupported_type', `content type ${type} is not accepted`);
  if (!byExt || byExt === byType) return byType;
  if (byType === 'txt' && isTextKind(byExt)) return byExt;
  throw new ExtractionRefused('unsupported_type', `content type ${type} contradicts the .${ext} extension`);
}
