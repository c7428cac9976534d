import type { Readable } from 'node:stream';
import { Busboy, type BusboyFileStream, type BusboyInstance } from '@fastify/busboy';
import type { DomainError } from '@voiceapi/kit/errors';
import type { Request } from 'express';
import { refusal } from './refusals';
import { contentTypeMatches, type FilePart, type MultipartSpec } from './route';

/**
 * Streams a `multipart/form-data` body (decision 0020): the text fields before the file parts, then
 * the file parts handed out one at a time as they arrive, then the text fields that came after
 * them (fields and files in any order). Nothing is buffered beyond the parser's and the
 * socket's own buffers; the byte limit is counted on the raw body as it passes, so an oversize
 * upload stops at the limit (413) however long it would have been.
 */
export interface MultipartReader {
  /** The text fields seen before the first file part (or before the end), and that part. */
  head: Promise<{ fields: Record<string, string>; first: FilePart | undefined }>;
  /** The text fields that came after a file part: complete once the body `ended`. */
  readonly lateFields: Record<string, string>;
  /** Every file part in order, starting with `first`; throws the body's error if it goes bad. */
  files: AsyncIterable<FilePart>;
  /** Settles when the body has been read to its end (unread file parts are discarded). */
  finish(): Promise<void>;
  /** The body's failure, once there is one (it wins over whatever the handler answered). */
  readonly error: DomainError | undefined;
  /** True once the body has been read to its end. */
  readonly ended: boolean;
  /**
   * After an answer sent while the upload is unread: reads and drops the rest (up to DRAIN_BYTES,
   * within DRAIN_MS), holding nothing. True when the body ended; false when the bound was reached
   * first, and the connection should be closed. Closing under a client still sending resets the
   * connection, and a reset can destroy the answer before the client reads it.
   */
  drain(): Promise<boolean>;
}

const MAX_FIELDS = 50;
const MAX_FIELD_BYTES = 64 * 1024;
/** What is read and dropped after an early answer: enough for any upload a client would try. */
const DRAIN_BYTES = 256 * 1024 * 1024;
const DRAIN_MS = 60_000;

export function readMultipart(req: Request, spec: MultipartSpec): MultipartReader {
  const read = startRead(req, spec, openParser(req, spec));
  listen(read);
  return {
    head: read.head,
    lateFields: read.lateFields,
    files: { [Symbol.asyncIterator]: () => iterateFiles(read) },
    finish: () => finishBody(read),
    get error() {
      return read.error;
    },
    drain() {
      req.unpipe(read.parser);
      return drainRequest(req);
    },
    get ended() {
      return read.ended;
    },
  };
}

type Head = { fields: Record<string, string>; first: FilePart | undefined };

/** One body being read: what the parser's events and the reader handed out share. */
interface BodyRead {
  readonly req: Request;
  readonly spec: MultipartSpec;
  readonly parser: BusboyInstance;
  readonly fields: Record<string, string>; // the text fields before the first file part
  readonly lateFields: Record<string, string>; // the text fields after it
  readonly counts: Map<string, number>; // the file parts seen per field, refused ones included
  readonly queue: FilePart[]; // file parts that arrived and were not handed out yet
  current: Readable | undefined; // the file part handed out last
  error: DomainError | undefined;
  ended: boolean;
  seenFile: boolean;
  readonly head: Promise<Head>;
  headSettled: boolean;
  resolveHead: (h: Head) => void;
  rejectHead: (e: DomainError) => void;
  waiters: (() => void)[]; // whoever waits for the next part or for the end (the handler's loop, then finish())
}

/**
 * The parser, with the limits of this body: refuses at once a body whose declared length is over
 * the limit (413), or one that is not multipart with a boundary (415).
 */
function openParser(req: Request, spec: MultipartSpec): BusboyInstance {
  const declared = Number(req.get('content-length'));
  if (declared > spec.maxBytes) throw tooLarge(spec.maxBytes);

  const maxFiles = Object.values(spec.files).reduce((n, f) => n + (f.maxCount ?? 1), 0);
  try {
    return Busboy({
      headers: req.headers as never,
      // The file name as sent: a name with a path in it is refused by the owning service, not quietly shortened.
      preservePath: true,
      limits: {
        fields: MAX_FIELDS,
        fieldSize: MAX_FIELD_BYTES,
        files: maxFiles,
        parts: MAX_FIELDS + maxFiles,
        fileSize: spec.maxBytes,
      },
    });
  } catch {
    throw refusal('unsupported_media_type', 'request body must be multipart/form-data with a boundary');
  }
}

function startRead(req: Request, spec: MultipartSpec, parser: BusboyInstance): BodyRead {
  let resolveHead!: (h: Head) => void;
  let rejectHead!: (e: DomainError) => void;
  const head = new Promise<Head>((res, rej) => {
    resolveHead = res;
    rejectHead = rej;
  });
  head.catch(() => undefined); // read through `error` too; never an unhandled rejection
  return {
    req,
    spec,
    parser,
    fields: {},
    lateFields: {},
    counts: new Map(),
    queue: [],
    current: undefined,
    error: undefined,
    ended: false,
    seenFile: false,
    head,
    headSettled: false,
    resolveHead,
    rejectHead,
    waiters: [],
  };
}

/** Follows the body: the parser's events, the raw bytes against the limit, the client going away. */
function listen(read: BodyRead): void {
  const { req, spec, parser } = read;
  parser.on('field', (name, value, _nameTruncated, valueTruncated) => onField(read, name, value, valueTruncated));
  parser.on('file', (field, stream, filename, _encoding, mimeType) => onFile(read, field, stream, filename, mimeType));
  for (const limit of ['partsLimit', 'filesLimit', 'fieldsLimit'] as const) {
    parser.on(limit, () => stop(read, invalid('body', 'too many parts')));
  }
  parser.on('error', () => stop(read, refusal('validation_error', 'malformed multipart body')));
  parser.on('finish', () => onFinish(read));
  let received = 0;
  req.on('data', (chunk: Buffer) => {
    received += chunk.length;
    if (received > spec.maxBytes) stop(read, tooLarge(spec.maxBytes));
  });
  req.once('close', () => {
    if (!req.complete) stop(read, refusal('validation_error', 'the upload was aborted by the client'));
  });
  req.pipe(parser);
}

function onField(read: BodyRead, name: string, value: string, valueTruncated: boolean): void {
  if (valueTruncated) return stop(read, refusal('payload_too_large', `field ${name} is over ${MAX_FIELD_BYTES} bytes`));
  if (Object.hasOwn(read.fields, name) || Object.hasOwn(read.lateFields, name))
    return stop(read, invalid(`body.${name}`, 'given more than once'));
  (read.seenFile ? read.lateFields : read.fields)[name] = value;
}

/** A file part: refused (its bytes skipped), handed out as the head's `first`, or queued for the files' loop. */
function onFile(read: BodyRead, field: string, stream: BusboyFileStream, filename: string, mimeType: string): void {
  const count = (read.counts.get(field) ?? 0) + 1;
  read.counts.set(field, count);
  if (read.error) return void stream.resume();
  const refused = fileRefusal(read.spec, field, count, mimeType);
  if (refused) {
    stream.resume();
    return stop(read, refused);
  }
  stream.once('limit', () => stop(read, tooLarge(read.spec.maxBytes)));
  // The failure reaches the reader of the stream, and the answer through `error`; not the process.
  stream.on('error', () => undefined);
  const part: FilePart = { field, filename, contentType: mimeType, stream };
  read.seenFile = true;
  if (!read.headSettled) {
    read.headSettled = true;
    read.current = stream;
    read.resolveHead({ fields: { ...read.fields }, first: part });
    return;
  }
  read.queue.push(part);
  notify(read);
}

/** Why the `count`th file part of `field` is refused: a field the spec does not name, one too many, a type not accepted. */
function fileRefusal(spec: MultipartSpec, field: string, count: number, mimeType: string): DomainError | undefined {
  const fileSpec = Object.hasOwn(spec.files, field) ? spec.files[field] : undefined;
  if (!fileSpec) return invalid(`body.${field}`, 'unknown file field');
  if (count > (fileSpec.maxCount ?? 1)) return invalid(`body.${field}`, `at most ${fileSpec.maxCount ?? 1} file(s)`);
  if (fileSpec.contentTypes && !contentTypeMatches(mimeType, fileSpec.contentTypes)) {
    return refusal(
      'unsupported_media_type',
      `file ${field}: content type ${mimeType} is not accepted; accepted: ${fileSpec.contentTypes.join(', ')}`,
    );
  }
  return undefined;
}

/** The body's end: a required file field that never came fails it; a body without files settles the head. */
function onFinish(read: BodyRead): void {
  read.ended = true;
  for (const [field, f] of Object.entries(read.spec.files)) {
    if (f.required && !read.counts.get(field)) return stop(read, invalid(`body.${field}`, 'required'));
  }
  if (!read.headSettled) {
    read.headSettled = true;
    read.resolveHead({ fields: { ...read.fields }, first: undefined });
  }
  notify(read);
}

/** The body's failure: parsing stops, the parts not read fail with it, and every waiter wakes. */
function stop(read: BodyRead, e: DomainError): void {
  if (read.error) return;
  read.error = e;
  // Parsing stops here; what comes after is only drained (see drain()).
  read.req.unpipe(read.parser);
  read.req.pause();
  if (read.current && !read.current.readableEnded) read.current.destroy(e);
  for (const part of read.queue) part.stream.destroy(e);
  if (!read.headSettled) {
    read.headSettled = true;
    read.rejectHead(e);
  }
  notify(read);
}

function notify(read: BodyRead): void {
  const ws = read.waiters;
  read.waiters = [];
  for (const w of ws) w();
}

const waitForChange = (read: BodyRead) => new Promise<void>((resolve) => read.waiters.push(resolve));

async function* iterateFiles(read: BodyRead): AsyncGenerator<FilePart> {
  const h = await read.head;
  if (h.first) yield h.first;
  for (;;) {
    // The parser reaches the next part only once this one is read: discard what was left.
    if (read.current && !read.current.readableEnded && !read.current.destroyed) read.current.resume();
    if (read.error) throw read.error;
    const next = read.queue.shift();
    if (next) {
      read.current = next.stream;
      yield next;
      continue;
    }
    if (read.ended) return;
    await waitForChange(read);
  }
}

/** Reads the body to its end (or its failure), discarding the file parts nobody read. */
async function finishBody(read: BodyRead): Promise<void> {
  for (;;) {
    if (read.error || read.ended) return;
    if (read.current && !read.current.readableEnded && !read.current.destroyed) read.current.resume();
    for (const part of read.queue.splice(0)) part.stream.resume();
    await waitForChange(read);
  }
}

/**
 * Reads and drops the rest of a request body (up to DRAIN_BYTES, within DRAIN_MS), holding none of
 * it. True when the body ended; false when the bound came first (the caller closes the connection).
 */
export async function drainRequest(req: Request): Promise<boolean> {
  if (req.complete) return true;
  let dropped = 0;
  let settle!: (ended: boolean) => void;
  const outcome = new Promise<boolean>((resolve) => (settle = resolve));
  const onData = (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > DRAIN_BYTES) settle(false);
  };
  const onEnd = () => settle(true);
  const onClose = () => settle(req.complete);
  const timer = setTimeout(() => settle(false), DRAIN_MS);
  req.on('data', onData).once('end', onEnd).once('close', onClose);
  req.resume();
  const ended = await outcome;
  clearTimeout(timer);
  req.off('data', onData).off('end', onEnd).off('close', onClose);
  if (!ended) req.pause();
  return ended;
}

const tooLarge = (max: number) => refusal('payload_too_large', `upload is over the limit of ${max} bytes`);
const invalid = (path: string, message: string) =>
  refusal('validation_error', `invalid body: ${path} ${message}`, [{ path, message }]);
