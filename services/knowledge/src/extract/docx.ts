import { zipSync } from 'fflate';
import mammoth from 'mammoth';
import { fromBufferPromise, type Entry, type ZipFile } from 'yauzl';
import { ExtractionRefused } from './refused';

export interface ArchiveLimits {
  maxUncompressedBytes: number;
  maxEntries: number;
  maxRatio: number;
}
/** Entries below this size may compress as well as they like (a page of repeated table markup does). */
const BIG_ENTRY = 1024 * 1024;

const unreadable = (e: unknown) =>
  e instanceof ExtractionRefused
    ? e
    : new ExtractionRefused('unreadable', `the docx cannot be read: ${(e as Error).message}`);
const tooLarge = (what: string) => new ExtractionRefused('archive_too_large', `the docx ${what}`);

/**
 * A docx is a zip, and mammoth (through JSZip) inflates what it reads in memory with no limit, so a
 * zip bomb is refused here first. The central directory is checked before anything is inflated
 * (entry count, declared total size, compression ratio of big entries); then, because declared
 * sizes can lie, every entry is inflated by yauzl under one running byte budget that aborts the
 * moment it is exceeded. mammoth is then given a new, stored (uncompressed) zip of exactly those
 * bytes, so it never inflates anything itself and never parses the upload's zip structure.
 */
export async function docxText(bytes: Buffer, limits: ArchiveLimits): Promise<string> {
  const files = await inflateCapped(bytes, limits);
  try {
    const { value } = await mammoth.extractRawText({ buffer: Buffer.from(zipSync(files, { level: 0 })) });
    return value.trim();
  } catch (e) {
    throw unreadable(e);
  }
}

async function inflateCapped(bytes: Buffer, limits: ArchiveLimits): Promise<Record<string, Uint8Array>> {
  let zip: ZipFile | undefined;
  try {
    // validateEntrySizes off: the budget below is the check that matters, and it applies to the
    // bytes actually produced, whatever the headers say.
    zip = await fromBufferPromise(bytes, { autoClose: false, validateEntrySizes: false });
    if (zip.entryCount > limits.maxEntries)
      throw tooLarge(`has ${zip.entryCount} entries (at most ${limits.maxEntries})`);
    const entries: Entry[] = [];
    let declared = 0;
    for await (const entry of zip.eachEntry()) {
      if (entry.fileName.endsWith('/')) continue;
      declared += entry.uncompressedSize;
      if (declared > limits.maxUncompressedBytes)
        throw tooLarge(`would inflate to more than ${limits.maxUncompressedBytes} bytes`);
      if (entry.uncompressedSize > BIG_ENTRY && entry.uncompressedSize > limits.maxRatio * entry.compressedSize) {
        throw tooLarge(`entry ${entry.fileName} is compressed more than ${limits.maxRatio} to 1`);
      }
      entries.push(entry);
    }
    if (!entries.some((e) => e.fileName === 'word/document.xml')) {
      throw new ExtractionRefused('type_mismatch', 'the zip archive is not a Word document (no word/document.xml)');
    }
    const files: Record<string, Uint8Array> = {};
    let budget = limits.maxUncompressedBytes;
    for (const entry of entries) {
      const stream = await zip.openReadStreamPromise(entry);
      const chunks: Buffer[] = [];
      for await (const chunk of stream as AsyncIterable<Buffer>) {
        budget -= chunk.length;
        if (budget < 0) {
          stream.destroy();
          throw tooLarge(`inflates to more than ${limits.maxUncompressedBytes} bytes (its sizes are understated)`);
        }
        chunks.push(chunk);
      }
      files[entry.fileName] = Buffer.concat(chunks);
    }
    return files;
  } catch (e) {
    throw unreadable(e);
  } finally {
    zip?.close();
  }
}
