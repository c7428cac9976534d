import { isUtf8 } from 'node:buffer';
import type { DocumentKind } from './kinds';
import { ExtractionRefused } from './refused';

const PDF = Buffer.from('%PDF-');
const ZIP = Buffer.from([0x50, 0x4b, 0x03, 0x04]);
const BOM = Buffer.from([0xef, 0xbb, 0xbf]);
// ELF, and Mach-O in both byte orders, 32/64 bit and universal ("fat").
const EXECUTABLES = ['7f454c46', 'feedface', 'feedfacf', 'cefaedfe', 'cffaedfe', 'cafebabe'].map((h) =>
  Buffer.from(h, 'hex'),
);

/** Windows/DOS executables start `MZ`; so can an ordinary sentence, so the header's NUL bytes decide. */
const isDosExecutable = (b: Buffer) => b[0] === 0x4d && b[1] === 0x5a && b.subarray(2, 64).includes(0);

/**
 * Refuses bytes that are not what the upload declared, before any parser sees them: executables in
 * every kind, PDF without its `%PDF-` header, docx that is not a zip, and for the text kinds anything
 * that is not UTF-8 or holds NUL bytes (every binary format does). Returns the text kinds' text.
 */
export function checkBytes(bytes: Buffer, kind: DocumentKind): string | undefined {
  if (bytes.length === 0) throw new ExtractionRefused('empty', 'the file is empty');
  if (EXECUTABLES.some((m) => bytes.subarray(0, m.length).equals(m)) || isDosExecutable(bytes)) {
    throw new ExtractionRefused('type_mismatch', 'the file is an executable program');
  }
  const mismatch = (what: string) => new ExtractionRefused('type_mismatch', `the file is declared ${kind} but ${what}`);
  if (kind === 'pdf') {
    if (!bytes.subarray(0, PDF.length).equals(PDF)) throw mismatch('has no PDF header');
    return undefined;
  }
  if (kind === 'docx') {
    if (!bytes.subarray(0, ZIP.length).equals(ZIP)) throw mismatch('is not a zip archive');
    return undefined;
  }
  if (bytes.includes(0) || !isUtf8(bytes)) throw mismatch('is not UTF-8 text');
  // A PDF with only ASCII bytes passes the checks above; it is still not text.
  if (bytes.subarray(0, PDF.length).equals(PDF)) throw mismatch('is a PDF');
  const body = bytes.subarray(0, BOM.length).equals(BOM) ? bytes.subarray(BOM.length) : bytes;
  return body.toString('utf8');
}
