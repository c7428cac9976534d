// Over 300 lines because the cases of one module share its fixtures.
import { constants, crc32, deflateRawSync } from 'node:zlib';
import { strToU8, zipSync } from 'fflate';
import {
  ALLOWED_CONTENT_TYPES,
  countWords,
  declaredKind,
  extractText,
  ExtractionRefused,
  type DocumentKind,
} from './index';

// Every fixture is made here, in memory: PDFs written by hand with a computed xref table, docx files
// zipped with fflate, zip bombs assembled from a deflate segment repeated (no 200 MB buffer).

const DOCX = 'application/vnd.openxmlformats-officedocument.wordprocessingml.document';

/** A PDF of one Helvetica text line per `lines` entry, `pages` pages; byte offsets computed for the xref. */
function pdf(pages: string[][]): Buffer {
  const objects = ['<< /Type /Catalog /Pages 2 0 R >>', '', '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>'];
  const kids: string[] = [];
  for (const lines of pages) {
    const content = lines.map((l, i) => `BT /F1 12 Tf 72 ${712 - 14 * i} Td (${l}) Tj ET`).join('\n');
    const page = objects.length + 1;
    kids.push(`${page} 0 R`);
    objects.push(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents ${page + 1} 0 R >>`,
    );
    objects.push(`<< /Length ${Buffer.byteLength(content)} >>\nstream\n${content}\nendstream`);
  }
  objects[1] = `<< /Type /Pages /Kids [${kids.join(' ')}] /Count ${kids.length} >>`;
  let out = '%PDF-1.4\n';
  const offsets = objects.map((body, i) => {
    const at = Buffer.byteLength(out);
    out += `${i + 1} 0 obj\n${body}\nendobj\n`;
    return at;
  });
  const xref = Buffer.byteLength(out);
  out += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  out += offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('');
  out += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(out, 'latin1');
}

const CONTENT_TYPES =
  '<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
  '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>' +
  '<Default Extension="xml" ContentType="application/xml"/>' +
  `<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>`;
const RELS =
  '<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">' +
  '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument" Target="word/document.xml"/></Relationships>';
const documentXml = (paragraphs: string[]) =>
  '<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>' +
  paragraphs.map((p) => `<w:p><w:r><w:t xml:space="preserve">${p}</w:t></w:r></w:p>`).join('') +
  '</w:body></w:document>';

function docx(paragraphs: string[], extra: Record<string, Uint8Array> = {}): Buffer {
  const files = {
    '[Content_Types].xml': strToU8(CONTENT_TYPES),
    '_rels/.rels': strToU8(RELS),
    'word/document.xml': strToU8(documentXml(paragraphs)),
    ...extra,
  };
  return Buffer.from(zipSync(files));
}

/**
 * A docx whose word/document.xml is `mib` MiB of zeros, deflated. A full-flush deflate segment of
 * 1 MiB of zeros is self-contained, so the entry is that segment `mib` times plus a final empty
 * block. `declaredSize` is what the headers claim the entry inflates to (a liar can understate it).
 */
function zeroBomb(mib: number, declaredSize = mib * 1024 * 1024): Buffer {
  const chunk = Buffer.alloc(1024 * 1024);
  const segment = deflateRawSync(chunk, { level: 9, finishFlush: constants.Z_FULL_FLUSH });
  const data = Buffer.concat([...Array<Buffer>(mib).fill(segment), deflateRawSync(Buffer.alloc(0))]);
  let crc = 0;
  for (let i = 0; i < mib; i++) crc = crc32(chunk, crc);
  const name = Buffer.from('word/document.xml');
  const local = Buffer.alloc(30);
  local.writeUInt32LE(0x04034b50, 0);
  const central = Buffer.alloc(46);
  central.writeUInt32LE(0x02014b50, 0);
  central.writeUInt16LE(20, 4);
  for (const [header, at] of [
    [local, 4],
    [central, 6],
  ] as const) {
    header.writeUInt16LE(20, at); // version needed
    header.writeUInt16LE(8, at + 4); // deflate
    header.writeUInt16LE(0x21, at + 8); // DOS date 1980-01-01
    header.writeUInt32LE(crc >>> 0, at + 10);
    header.writeUInt32LE(data.length, at + 14);
    header.writeUInt32LE(declaredSize, at + 18);
    header.writeUInt16LE(name.length, at + 22);
  }
  const end = Buffer.alloc(22);
  end.writeUInt32LE(0x06054b50, 0);
  end.writeUInt16LE(1, 8);
  end.writeUInt16LE(1, 10);
  end.writeUInt32LE(central.length + name.length, 12);
  end.writeUInt32LE(local.length + name.length + data.length, 16);
  return Buffer.concat([local, name, data, central, name, end]);
}

const refusal = async (p: Promise<unknown>) => {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ExtractionRefused);
  return (err as ExtractionRefused).reason;
};
const text = (s: string) => Buffer.from(s, 'utf8');

describe('declaredKind', () => {
  it.each([
    ['notes.txt', 'text/plain', 'txt'],
    ['Guide.MD', undefined, 'md'],
    ['guide.markdown', '', 'md'],
    ['readme.md', 'text/plain', 'md'],
    ['prices.csv', 'text/csv; charset=utf-8', 'csv'],
    ['prices.csv', 'text/plain', 'csv'],
    ['faq.htm', 'application/octet-stream', 'html'],
    ['faq', 'text/html', 'html'],
    ['C:\\Users\\ana\\Leaflet.PDF', 'application/pdf', 'pdf'],
    ['intake.docx', DOCX, 'docx'],
    ['intake.docx', undefined, 'docx'],
  ])('%s declared %s is %s', (name, type, kind) => {
    expect(declaredKind(name, type)).toBe(kind);
  });

  it.each([
    ['leaflet.pdf', 'text/plain'],
    ['notes.txt', 'application/pdf'],
    ['intake.docx', 'text/plain'],
    ['photo.png', 'image/png'],
    ['setup.exe', 'application/octet-stream'],
    ['old.doc', 'application/msword'],
    ['notes', undefined],
    ['notes', 'application/octet-stream'],
    ['notes.txt', 'image/png'],
  ])('refuses %s declared %s', (name, type) => {
    expect(() => declaredKind(name, type)).toThrow(ExtractionRefused);
    try {
      declaredKind(name, type);
    } catch (e) {
      expect((e as ExtractionRefused).reason).toBe('unsupported_type');
    }
  });

  it('lists the accepted content types', () => {
    expect(ALLOWED_CONTENT_TYPES).toEqual(
      expect.arrayContaining(['text/plain', 'text/markdown', 'text/csv', 'text/html', 'application/pdf', DOCX]),
    );
    for (const type of ALLOWED_CONTENT_TYPES) expect(() => declaredKind('upload', type)).not.toThrow();
  });
});

describe('extractText', () => {
  it('reads UTF-8 text, dropping a byte order mark', async () => {
    const r = await extractText(
      Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), text('Hello  clinic world\nCafé ouvert 9h–17h\n')]),
      'txt',
    );
    expect(r).toEqual({ kind: 'txt', text: 'Hello  clinic world\nCafé ouvert 9h–17h', wordCount: 7 });
  });

  it('keeps a text that merely starts with MZ, and a script', async () => {
    expect((await extractText(text('MZ is a postcode area'), 'txt')).wordCount).toBe(5);
    expect((await extractText(text('#!/bin/sh\necho hi\n'), 'txt')).text).toBe('#!/bin/sh\necho hi');
  });

  it('strips Markdown syntax, keeping code, link text and alt text', async () => {
    const md = [
      '# Opening *hours*',
      '',
      'We are open **Monday** to Friday, see [the map](https://example.com/map).',
      '',
      '- Walk-ins welcome',
      '- ![Parking sign](p.png) parking at the back',
      '',
      '<div class="note">Closed on <b>holidays</b></div>',
      '',
      '```',
      'call 555-0100',
      '```',
    ].join('\n');
    const r = await extractText(text(md), 'md');
    expect(r.text).toBe(
      'Opening hours\nWe are open Monday to Friday, see the map.\nWalk-ins welcome\nParking sign parking at the back\nClosed on holidays\ncall 555-0100',
    );
    expect(r.wordCount).toBe(26);
  });

  it('joins CSV cells with spaces and records with newlines', async () => {
    const r = await extractText(
      text('name,phone,notes\n"Smith, Jane",555-0100,\n\nDoe,555-0101,"prefers\nmornings"\n'),
      'csv',
    );
    expect(r.text).toBe('name phone notes\nSmith, Jane 555-0100\nDoe 555-0101 prefers\nmornings');
    expect(r.wordCount).toBe(12);
  });

  it('refuses malformed CSV as unreadable', async () => {
    expect(await refusal(extractText(text('a,"b\nc,d\n'), 'csv'))).toBe('unreadable');
  });

  it('reads HTML text without scripts, styles, link targets or images', async () => {
    const html =
      '<html><head><title>Clinic</title><style>p { color: red }</style></head><body>' +
      '<h1>Opening hours</h1><p>Mon&ndash;Fri <b>9</b> to 5, <a href="https://example.com">book online</a>.</p>' +
      '<img src="x.png" alt="logo"><script>document.write("injected text")</script></body></html>';
    const r = await extractText(text(html), 'html');
    expect(r.text).toBe('Opening hours\n\nMon–Fri 9 to 5, book online.');
    expect(r.wordCount).toBe(9);
  });

  it('reads the text of a PDF', async () => {
    const r = await extractText(pdf([['Hello clinic world']]), 'pdf');
    expect(r).toEqual({ kind: 'pdf', text: 'Hello clinic world', wordCount: 3 });
  });

  it('reads a 1 MB PDF of 250 pages in reasonable time', async () => {
    const line = 'Patients should arrive ten minutes early for their check in';
    const pages = Array.from({ length: 250 }, () => Array.from({ length: 50 }, () => line));
    const bytes = pdf(pages);
    expect(bytes.length).toBeGreaterThan(1_000_000);
    const started = Date.now();
    const r = await extractText(bytes, 'pdf');
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(r.wordCount).toBe(250 * 50 * 10);
  });

  it('refuses a PDF that PDF.js cannot parse as unreadable', async () => {
    expect(await refusal(extractText(text('%PDF-1.7\nthis is not really a pdf\n'), 'pdf'))).toBe('unreadable');
  });

  it('reads the text of a docx', async () => {
    const r = await extractText(docx(['Clinic opening hours', 'Monday to Friday, 9 to 5']), 'docx');
    expect(r).toEqual({ kind: 'docx', text: 'Clinic opening hours\n\nMonday to Friday, 9 to 5', wordCount: 9 });
  });

  it('refuses a zip without word/document.xml as a type mismatch, a broken zip as unreadable', async () => {
    const notWord = Buffer.from(zipSync({ 'xl/workbook.xml': strToU8('<workbook/>') }));
    expect(await refusal(extractText(notWord, 'docx'))).toBe('type_mismatch');
    const broken = Buffer.concat([Buffer.from([0x50, 0x4b, 0x03, 0x04]), Buffer.alloc(200, 7)]);
    expect(await refusal(extractText(broken, 'docx'))).toBe('unreadable');
  });

  it('refuses a docx declaring 200 MB of zeros before inflating anything', async () => {
    const bomb = zeroBomb(200);
    expect(bomb.length).toBeLessThan(300_000);
    const started = Date.now();
    expect(await refusal(extractText(bomb, 'docx'))).toBe('archive_too_large');
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('refuses a docx whose sizes are understated, at the byte budget', async () => {
    // Claims 1 KB; really 60 MiB, past the default 50 MiB budget.
    expect(await refusal(extractText(zeroBomb(60, 1024), 'docx'))).toBe('archive_too_large');
    // The same lie under a small budget, to show it is the bytes that count.
    expect(await refusal(extractText(zeroBomb(3, 1024), 'docx', { maxUncompressedBytes: 2 * 1024 * 1024 }))).toBe(
      'archive_too_large',
    );
  });

  it('refuses big entries compressed past the ratio, and too many entries', async () => {
    expect(await refusal(extractText(zeroBomb(2), 'docx'))).toBe('archive_too_large');
    const extra = Object.fromEntries(Array.from({ length: 1000 }, (_, i) => [`word/media/p${i}.txt`, strToU8('x')]));
    expect(await refusal(extractText(docx(['Hello'], extra), 'docx'))).toBe('archive_too_large');
    expect((await extractText(docx(['Hello'], extra), 'docx', { maxEntries: 2000 })).text).toBe('Hello');
  });

  const PNG = Buffer.from('89504e470d0a1a0a0000000d4948445200000001000000010806000000', 'hex');
  const ELF = Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1]), Buffer.alloc(57)]);
  const MZ = Buffer.concat([text('MZ'), Buffer.from([0x90, 0, 3, 0, 0, 0, 4, 0]), Buffer.alloc(54)]);
  const MACHO = Buffer.concat([Buffer.from('cffaedfe0c000001', 'hex'), Buffer.alloc(24)]);
  const ASCII_PDF = pdf([['Hello']]);
  it.each<[string, Buffer, DocumentKind]>([
    ['text declared as PDF', text('Hello clinic world'), 'pdf'],
    ['a PNG declared as PDF', PNG, 'pdf'],
    ['a PDF declared as docx', ASCII_PDF, 'docx'],
    ['a PDF declared as text', ASCII_PDF, 'txt'],
    ['a PNG declared as text', PNG, 'txt'],
    ['an ELF executable named .txt', ELF, 'txt'],
    ['a Windows executable named .txt', MZ, 'txt'],
    ['a Windows executable declared as PDF', Buffer.concat([MZ, text('%PDF-')]), 'pdf'],
    ['a Mach-O executable declared as docx', MACHO, 'docx'],
    ['Latin-1 text', Buffer.from('Café ouvert', 'latin1'), 'txt'],
    ['invalid UTF-8 as Markdown', Buffer.from([0x48, 0xc3, 0x28]), 'md'],
    ['text with a NUL byte', text('Hello\0world'), 'csv'],
  ])('refuses %s as a type mismatch', async (_what, bytes, kind) => {
    expect(await refusal(extractText(bytes, kind))).toBe('type_mismatch');
  });

  it.each<DocumentKind>(['txt', 'md', 'csv', 'html', 'pdf', 'docx'])(
    'refuses zero bytes declared %s as empty',
    async (kind) => {
      expect(await refusal(extractText(Buffer.alloc(0), kind))).toBe('empty');
    },
  );

  it('accepts text with no words', async () => {
    expect(await extractText(text(' \n-- \n'), 'txt')).toEqual({ kind: 'txt', text: '--', wordCount: 0 });
  });

  it('cuts text at maxTextChars, never inside a surrogate pair', async () => {
    expect(await extractText(text('word '.repeat(10)), 'txt', { maxTextChars: 12 })).toEqual({
      kind: 'txt',
      text: 'word word wo',
      wordCount: 3,
    });
    expect((await extractText(text('😀😀'), 'txt', { maxTextChars: 3 })).text).toBe('😀');
  });
});

describe('countWords', () => {
  it.each([
    ['', 0],
    ['Hello, world!', 2],
    ["don't stop", 3],
    ['9am–5pm, room 12B', 4],
    ['naïve café Ärzte', 3],
    ['हिन्दी भाषा', 2],
    ['Здравствуйте мир', 2],
    ['診療時間 です', 2],
    ['— … ***', 0],
  ])('%j has %d words', (s, n) => {
    expect(countWords(s)).toBe(n);
  });
});
