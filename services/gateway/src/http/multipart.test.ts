// Over 300 lines because the cases of one module share its fixtures.
import { createHash } from 'node:crypto';
import { request, type ClientRequest } from 'node:http';
import { notFound } from '@voiceapi/kit/errors';
import { defineRoute, multipart, noBody, type FilePart } from './route';
import { json, serve, type Served } from './route-test-kit';
import { z } from './zod';

// Streamed request and answer bodies, with test-only routes: no real route uses them yet.

const MAX = 4 * 1024 * 1024;

/** What the upload handler did with the bytes, as a service receiving chunks over gRPC would. */
let received: {
  parts: { field: string; filename: string; contentType: string; bytes: number; sha256: string }[];
  chunks: number;
  bytes: number;
} = {
  parts: [],
  chunks: 0,
  bytes: 0,
};

/** Held closed, the archive handler stops reading after its first chunk (a slow downstream). */
let gate: Promise<void> = Promise.resolve();

async function consume(part: FilePart, held = Promise.resolve()) {
  const hash = createHash('sha256');
  let bytes = 0;
  for await (const chunk of part.stream as AsyncIterable<Buffer>) {
    if (received.chunks === 1) await held;
    received.chunks++;
    received.bytes += chunk.length;
    bytes += chunk.length;
    hash.update(chunk);
  }
  return {
    field: part.field,
    filename: part.filename,
    contentType: part.contentType,
    bytes,
    sha256: hash.digest('hex'),
  };
}

const Upload = z.object({
  title: z.string().nullable(),
  parts: z.array(z.object({ field: z.string(), bytes: z.number(), sha256: z.string() })),
});

const routes = [
  defineRoute({
    method: 'post',
    path: '/documents',
    tag: 'Documents',
    summary: 'Upload a document',
    body: multipart({
      fields: z.strictObject({ title: z.string().max(20).optional() }),
      files: { file: { description: 'The document', required: true, contentTypes: ['text/plain', 'application/pdf'] } },
      maxBytes: MAX,
    }),
    responses: { 201: { description: 'Stored', schema: Upload } },
    handler: async ({ body }) => {
      received = { parts: [], chunks: 0, bytes: 0 };
      for await (const part of body.files) received.parts.push(await consume(part));
      const late = await body.fieldsAfterFiles();
      return {
        status: 201,
        body: {
          title: body.fields.title ?? late.title ?? null,
          parts: received.parts.map(({ field, bytes, sha256 }) => ({ field, bytes, sha256 })),
        },
      };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/albums',
    tag: 'Documents',
    summary: 'Upload up to three pictures',
    body: multipart({
      fields: z.strictObject({}),
      files: { picture: { description: 'A picture', maxCount: 3 } },
      maxBytes: MAX,
    }),
    responses: { 201: { description: 'Stored', schema: Upload } },
    handler: async ({ body }) => {
      received = { parts: [], chunks: 0, bytes: 0 };
      for await (const part of body.files) received.parts.push(await consume(part));
      return {
        status: 201,
        body: { title: null, parts: received.parts.map(({ field, bytes, sha256 }) => ({ field, bytes, sha256 })) },
      };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/archives',
    tag: 'Documents',
    summary: 'Upload a large archive',
    body: multipart({
      fields: z.strictObject({}),
      files: { archive: { description: 'The archive', required: true } },
      maxBytes: 200 * 1024 * 1024,
    }),
    responses: { 201: { description: 'Stored', schema: Upload } },
    handler: async ({ body }) => {
      received = { parts: [], chunks: 0, bytes: 0 };
      for await (const part of body.files) received.parts.push(await consume(part, gate));
      return {
        status: 201,
        body: { title: null, parts: received.parts.map(({ field, bytes, sha256 }) => ({ field, bytes, sha256 })) },
      };
    },
  }),
  defineRoute({
    method: 'get',
    path: '/recordings/{id}',
    tag: 'Recordings',
    summary: 'Download a recording',
    params: z.object({ id: z.string() }),
    responses: { 200: { description: 'The audio', binary: ['audio/mpeg'] } },
    handler: async ({ params }) => {
      async function* audio(): AsyncGenerator<Buffer> {
        if (params.id === 'gone') throw notFound('recording');
        for (let i = 0; i < 64; i++) yield Buffer.alloc(16 * 1024, i);
      }
      return {
        status: 200,
        stream: audio(),
        contentType: 'audio/mpeg',
        length: 64 * 16 * 1024,
        filename: `call ${params.id}.mp3`,
      };
    },
  }),
  defineRoute({
    method: 'post',
    path: '/recordings/{id}/redact',
    tag: 'Recordings',
    summary: 'An action',
    params: z.object({ id: z.string() }),
    body: noBody,
    responses: { 202: { description: 'Accepted' } },
    handler: async () => ({ status: 202 }),
  }),
];

const form = (...parts: [string, string | Blob, string?][]) => {
  const f = new FormData();
  for (const [name, value, filename] of parts) {
    if (typeof value === 'string') f.append(name, value);
    else f.append(name, value, filename);
  }
  return f;
};
const text = (s: string, type = 'text/plain') => new Blob([s], { type });
const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');

describe('multipart/form-data, streamed', () => {
  let s: Served;
  beforeAll(async () => {
    s = await serve(routes, { checkResponses: true });
  });
  afterAll(() => s.close());

  const upload = (path: string, body: FormData) => fetch(`${s.url}${path}`, { method: 'POST', body }).then(json);

  it('hands the handler the text fields and the file as a stream, in chunks', async () => {
    const content = 'hello world\n'.repeat(50_000);
    const res = await upload('/documents', form(['title', 'Notes'], ['file', text(content), 'notes.txt']));
    expect(res).toMatchObject({
      status: 201,
      body: { title: 'Notes', parts: [{ field: 'file', bytes: content.length, sha256: sha(content) }] },
    });
    expect(received.parts[0]).toMatchObject({ filename: 'notes.txt', contentType: 'text/plain' });
    expect(received.chunks).toBeGreaterThan(1);
  });

  it('takes text fields after the file too (a form’s parts come in any order)', async () => {
    const res = await upload('/documents', form(['file', text('late title'), 'x.txt'], ['title', 'Late']));
    expect(res).toMatchObject({ status: 201, body: { title: 'Late', parts: [{ field: 'file', bytes: 10 }] } });
  });

  it('hands several files over one after the other', async () => {
    const res = await upload(
      '/albums',
      form(['picture', text('a', 'image/png'), 'a.png'], ['picture', text('bb', 'image/png'), 'b.png']),
    );
    expect(res.body.parts).toEqual([
      { field: 'picture', bytes: 1, sha256: sha('a') },
      { field: 'picture', bytes: 2, sha256: sha('bb') },
    ]);
  });

  it.each([
    ['the required file is missing', () => form(['title', 'Notes']), 400, 'body.file'],
    [
      'a text field after the file is invalid',
      () => form(['file', text('x'), 'x.txt'], ['title', 'x'.repeat(21)]),
      400,
      'body.title',
    ],
    [
      'a text field is given before and after the file',
      () => form(['title', 'a'], ['file', text('x'), 'x.txt'], ['title', 'b']),
      400,
      'body.title',
    ],
    ['a file field is unknown', () => form(['attachment', text('x'), 'x.txt']), 400, 'body.attachment'],
    ['a text field is invalid', () => form(['title', 'x'.repeat(21)], ['file', text('x'), 'x.txt']), 400, 'body.title'],
    ['a text field is unknown', () => form(['colour', 'red'], ['file', text('x'), 'x.txt']), 400, 'body'],
  ])('refuses a body where %s with 400 and details', async (_what, body, status, path) => {
    const res = await upload('/documents', body());
    expect(res).toMatchObject({
      status,
      body: { reasonCode: 'validation_error', details: [expect.objectContaining({ path })] },
    });
  });

  it('refuses a file of a content type the route does not accept, and a body that is not multipart, with 415', async () => {
    expect(await upload('/documents', form(['file', text('x', 'image/png'), 'x.png']))).toMatchObject({
      status: 415,
      body: { reasonCode: 'unsupported_media_type' },
    });
    const notMultipart = await fetch(`${s.url}/documents`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    }).then(json);
    expect(notMultipart).toMatchObject({ status: 415, body: { reasonCode: 'unsupported_media_type' } });
  });

  it('refuses more files than a field takes', async () => {
    const four = form(
      ...Array.from({ length: 4 }, (_, i): [string, Blob, string] => [
        'picture',
        text(String(i), 'image/png'),
        `${i}.png`,
      ]),
    );
    expect(await upload('/albums', four)).toMatchObject({ status: 400, body: { reasonCode: 'validation_error' } });
  });

  it('refuses a declared Content-Length over the limit at once, without reading the body', async () => {
    const res = await rawUpload(s.url, '/documents', {
      contentLength: 150 * 1024 * 1024,
      chunks: (async function* () {})(),
    });
    expect(res.status).toBe(413);
    expect(JSON.parse(res.body)).toMatchObject({ reasonCode: 'payload_too_large' });
  });

  const boundary = 'test-boundary-7MA4YWxk';
  let sent = 0;
  async function* bigUpload(field: string, megabytes: number): AsyncGenerator<Buffer> {
    const chunk = Buffer.alloc(64 * 1024, 'a');
    sent = 0;
    yield Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="${field}"; filename="big.txt"\r\nContent-Type: text/plain\r\n\r\n`,
    );
    for (let i = 0; i < (megabytes * 1024 * 1024) / chunk.length; i++) {
      sent += chunk.length;
      yield chunk; // one buffer, sent again and again: the client's own garbage would blur the server's
    }
    yield Buffer.from(`\r\n--${boundary}--\r\n`);
  }

  it('streams a 100 MB upload through the handler with backpressure, never holding it in memory', async () => {
    let open!: () => void;
    gate = new Promise((resolve) => (open = resolve));
    const answer = rawUpload(s.url, '/archives', { boundary, chunks: bigUpload('archive', 100) });
    // While the handler holds its first chunk, the client can send only what the socket and
    // parser buffers take (3.8 MB here). A gateway that buffered uploads would take all 100 MB.
    const held = await steady(() => sent);
    expect(received.chunks).toBe(1);
    expect(held).toBeLessThan(16 * 1024 * 1024);
    open();
    const res = await answer;
    expect(res.status).toBe(201);
    expect(received.bytes).toBe(100 * 1024 * 1024);
    expect(JSON.parse(res.body).parts).toEqual([
      { field: 'archive', bytes: 100 * 1024 * 1024, sha256: expect.any(String) },
    ]);
  });

  it('refuses a 150 MB streamed upload with 413 at the limit, without holding it in memory', async () => {
    const body = () => bigUpload('file', 150);
    const before = memory();
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, memory())), 5);
    try {
      const res = await rawUpload(s.url, '/documents', { boundary, chunks: body() });
      expect(res.status).toBe(413);
      expect(JSON.parse(res.body)).toMatchObject({ reasonCode: 'payload_too_large' });
    } finally {
      clearInterval(sampler);
    }
    // The handler streamed at most the limit, the client was stopped long before 150 MB, and
    // memory grew by a small fraction of the upload.
    expect(received.bytes).toBeGreaterThan(0);
    expect(received.bytes).toBeLessThanOrEqual(MAX);
    expect(received.parts).toEqual([]); // the handler's read failed: it never finished the part
    expect(sent).toBeLessThan((150 * 1024 * 1024) / 4);
    expect(peak - before).toBeLessThan(32 * 1024 * 1024);
  });
});

describe('binary answers', () => {
  let s: Served;
  beforeAll(async () => {
    s = await serve(routes, { checkResponses: true });
  });
  afterAll(() => s.close());

  it('streams the bytes with their content type, length and file name', async () => {
    const res = await fetch(`${s.url}/recordings/r1`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('audio/mpeg');
    expect(res.headers.get('content-length')).toBe(String(64 * 16 * 1024));
    expect(res.headers.get('content-disposition')).toBe(
      `attachment; filename="call r1.mp3"; filename*=UTF-8''call%20r1.mp3`,
    );
    const bytes = Buffer.from(await res.arrayBuffer());
    expect(bytes.length).toBe(64 * 16 * 1024);
    expect(bytes[16 * 1024 * 63]).toBe(63);
  });

  it('answers the documented JSON error when the source fails before the first byte', async () => {
    expect(await fetch(`${s.url}/recordings/gone`).then(json)).toMatchObject({
      status: 404,
      body: { reasonCode: 'not_found' },
    });
  });
});

describe('OpenAPI for the three body kinds and binary answers', () => {
  let doc: Record<string, any>;
  beforeAll(async () => {
    const s = await serve(routes);
    doc = s.document();
    await s.close();
  });

  it('describes a multipart body: text fields, file parts as binary, accepted types, 413 and 415', () => {
    const op = doc.paths['/api/v1/documents'].post;
    const media = op.requestBody.content['multipart/form-data'];
    expect(media.schema.properties.file).toMatchObject({ type: 'string', format: 'binary' });
    expect(media.schema.properties.title).toMatchObject({ type: 'string', maxLength: 20 });
    expect(media.schema.required).toEqual(['file']);
    expect(media.encoding.file.contentType).toBe('text/plain, application/pdf');
    expect(Object.keys(op.responses)).toEqual(expect.arrayContaining(['201', '400', '413', '415']));
    const album = doc.paths['/api/v1/albums'].post.requestBody.content['multipart/form-data'].schema;
    expect(album.properties.picture).toMatchObject({
      type: 'array',
      maxItems: 3,
      items: { type: 'string', format: 'binary' },
    });
  });

  it('describes a binary answer by its content type', () => {
    const ok = doc.paths['/api/v1/recordings/{id}'].get.responses['200'];
    expect(ok.content).toEqual({ 'audio/mpeg': { schema: { type: 'string', format: 'binary' } } });
  });

  it('describes an action body as optional and empty', () => {
    const op = doc.paths['/api/v1/recordings/{id}/redact'].post;
    expect(op.requestBody).toMatchObject({
      required: false,
      content: { 'application/json': { schema: { type: 'object', maxProperties: 0 } } },
    });
  });
});

/** The value once it has not changed for 300 ms. */
async function steady(value: () => number): Promise<number> {
  let last = -1;
  for (;;) {
    await new Promise((r) => setTimeout(r, 300));
    const now = value();
    if (now === last && now > 0) return now;
    last = now;
  }
}

/** JS heap plus buffers: where an upload held in memory would show. */
const memory = () => {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

/** A hand-made upload: chunked from a generator (or a declared length), stopped when the answer comes. */
function rawUpload(
  base: string,
  path: string,
  opts: { boundary?: string; contentLength?: number; chunks: AsyncGenerator<Buffer> },
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const url = new URL(`${base}${path}`);
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        headers: {
          'content-type': `multipart/form-data; boundary=${opts.boundary ?? 'x'}`,
          ...(opts.contentLength !== undefined && { 'content-length': opts.contentLength }),
        },
      },
      (res) => {
        answered = true;
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (body += c));
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
        res.on('error', reject);
      },
    );
    req.flushHeaders();
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    void (async () => {
      for await (const chunk of opts.chunks) {
        if (answered || req.destroyed) break;
        if (!req.write(chunk)) await resumed(req);
      }
      if (!answered && !req.destroyed && opts.contentLength === undefined) req.end();
    })();
  });
}

/** Until the request may be written again, or is answered or closed. */
function resumed(req: ClientRequest): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      req.off('drain', done).off('close', done).off('response', done);
      resolve();
    };
    req.on('drain', done).on('close', done).on('response', done);
  });
}
