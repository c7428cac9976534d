import { definePDFJSModule, getDocumentProxy } from 'unpdf';
import { ExtractionRefused } from './refused';

// unpdf ships PDF.js as an ES module (`dist/pdfjs.mjs`, no worker, no native code) that it loads with
// `import()`. Jest's module sandbox cannot run `import()`, so it is loaded with Node's own `require`
// (Node >= 22 requires ES modules natively), taken from `getBuiltinModule` because jest swaps
// `node:module`'s `createRequire` for its own. Same code path in tests and in production, once.
let ready: Promise<void> | undefined;
function loadPdfjs(): Promise<void> {
  // eslint-disable-next-line @typescript-eslint/require-await -- a failing require becomes a rejection of the load, as an import() would
  ready ??= definePDFJSModule(async () => {
    const { createRequire } = process.getBuiltinModule('node:module');
    return createRequire(require.resolve('unpdf'))('./pdfjs.mjs') as unknown;
  });
  return ready;
}

/** The PDF's text, page by page, stopping once `maxChars` are had. */
export async function pdfText(bytes: Buffer, maxChars: number): Promise<string> {
  await loadPdfjs();
  let doc: Awaited<ReturnType<typeof getDocumentProxy>>;
  try {
    // A copy: PDF.js takes ownership of (detaches) the buffer it is given. No fonts loaded, nothing
    // fetched (no URLs are given for CMaps, standard fonts or WASM decoders): text only.
    doc = await getDocumentProxy(new Uint8Array(bytes), {
      disableFontFace: true,
      useSystemFonts: false,
      useWorkerFetch: false,
      verbosity: 0,
    });
  } catch (e) {
    throw new ExtractionRefused('unreadable', `the PDF cannot be read: ${(e as Error).message}`);
  }
  try {
    const pages: string[] = [];
    let chars = 0;
    for (let n = 1; n <= doc.numPages && chars < maxChars; n++) {
      const page = await doc.getPage(n);
      const content = await page.getTextContent();
      const text = content.items.map((i) => ('str' in i ? i.str + (i.hasEOL ? '\n' : '') : '')).join('');
      page.cleanup();
      pages.push(text.trim());
      chars += text.length;
    }
    return pages.filter(Boolean).join('\n');
  } catch (e) {
    throw new ExtractionRefused('unreadable', `the PDF cannot be read: ${(e as Error).message}`);
  } finally {
    await doc.loadingTask.destroy();
  }
}
