import type { Readable } from 'node:stream';
import { Busboy, type BusboyInstance } from '@fastify/busboy';
import type { DomainError } from '@voiceapi/kit';
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
  const declared = Number(req.get('content-length'));
  if (declared > spec.maxBytes) throw tooLarge(spec.maxBytes);

  const maxFiles = Object.values(spec.files).reduce((n, f) => n + (f.maxCount ?? 1), 0);
  let parser: BusboyInstance;
  try {
    parser = Busboy({
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

  const fields: Record<string, string> = {};
  const lateFields: Record<string, string> = {};
  const counts = new Map<string, number>();
  const queue: FilePart[] = [];
  let current: Readable | undefined;
  let error: DomainError | undefined;
  let ended = false;
  let seenFile = false;
  // Whoever waits for the next part or for the end (the handler's loop, then finish()).
  let waiters: (() => void)[] = [];
  const notify = () => {
    const ws = waiters;
    waiters = [];
    for (const w of ws) w();
  };

  let resolveHead!: (h: { fields: Record<string, string>; first: FilePart | undefined }) => void;
  let rejectHead!: (e: DomainError) => void;
  const head = new Promise<{ fields: Record<string, string>; first: FilePart | undefined }>((res, rej) => {
    resolveHead = res;
    rejectHead = rej;
  });
  head.catch(() => undefined); // read through `error` too; never an unhandled rejection
  let headSettled = false;

  const stop = (e: DomainError) => {
    if (error) return;
    error = e;
    // Parsing stops here; what comes after is only drained (see drain()).
    req.unpipe(parser);
    req.pause();
    if (current && !current.readableEnded) current.destroy(e);
    for (const part of queue) part.stream.destroy(e);
    if (!headSettled) {
      headSettled = true;
      rejectHead(e);
    }
    notify();
  };

  parser.on('field', (name, value, _nameTruncated, valueTruncated) => {
    if (valueTruncated) return stop(refusal('payload_too_large', `field ${name} is over ${MAX_FIELD_BYTES} bytes`));
    if (Object.hasOwn(fields, name) || Object.hasOwn(lateFields, name))
      return stop(invalid(`body.${name}`, 'given more than once'));
    (seenFile ? lateFields : fields)[name] = value;
  });
  parser.on('file', (field, stream, filename, _encoding, mimeType) => {
    const fileSpec = Object.hasOwn(spec.files, field) ? spec.files[field] : undefined;
    const count = (counts.get(field) ?? 0) + 1;
    counts.set(field, count);
    if (error) return void stream.resume();
    if (!fileSpec) {
      stream.resume();
      return stop(invalid(`body.${field}`, 'unknown file field'));
    }
    if (count > (fileSpec.maxCount ?? 1)) {
      stream.resume();
      return stop(invalid(`body.${field}`, `at most ${fileSpec.maxCount ?? 1} file(s)`));
    }
    if (fileSpec.contentTypes && !contentTypeMatches(mimeType, fileSpec.contentTypes)) {
      stream.resume();
      return stop(
        refusal(
          'unsupported_media_type',
          `file ${field}: content type ${mimeType} is not accepted; accepted: ${fileSpec.contentTypes.join(', ')}`,
        ),
      );
    }
    stream.once('limit', () => stop(tooLarge(spec.maxBytes)));
    // The failure reaches the reader of the stream, and the answer through `error`; not the process.
    stream.on('error', () => undefined);
    const part: FilePart = { field, filename, contentType: mimeType, stream };
    seenFile = true;
    if (!headSettled) {
      headSettled = true;
      current = stream;
      resolveHead({ fields: { ...fields }, first: part });
      return;
    }
    queue.push(part);
    notify();
  });
  for (const limit of ['partsLimit', 'filesLimit', 'fieldsLimit'] as const) {
    parser.on(limit, () => stop(invalid('body', 'too many parts')));
  }
  parser.on('error', () => stop(refusal('validation_error', 'malformed multipart body')));
  parser.on('finish', () => {
    ended = true;
    for (const [field, f] of Object.entries(spec.files)) {
      if (f.required && !counts.get(field)) return stop(invalid(`body.${field}`, 'required'));
    }
    if (!headSettled) {
      headSettled = true;
      resolveHead({ fields: { ...fields }, first: undefined });
    }
    notify();
  });
  let received = 0;
  req.on('data', (chunk: Buffer) => {
    received += chunk.length;
    if (received > spec.maxBytes) stop(tooLarge(spec.maxBytes));
  });
  req.once('close', () => {
    if (!req.complete) stop(refusal('validation_error', 'the upload was aborted by the client'));
  });
  req.pipe(parser);

  const waitForChange = () => new Promise<void>((resolve) => waiters.push(resolve));

  async function* iterate(): AsyncGenerator<FilePart> {
    const h = await head;
    if (h.first) yield h.first;
    for (;;) {
      // The parser reaches the next part only once this one is read: discard what was left.
      if (current && !current.readableEnded && !current.destroyed) current.resume();
      if (error) throw error;
      const next = queue.shift();
      if (next) {
        current = next.stream;
        yield next;
        continue;
      }
      if (ended) return;
      await waitForChange();
    }
  }

  return {
    head,
    lateFields,
    files: { [Symbol.asyncIterator]: iterate },
    async finish() {
      for (;;) {
        if (error || ended) return;
        if (current && !current.readableEnded && !current.destroyed) current.resume();
        for (const part of queue.splice(0)) part.stream.resume();
        await waitForChange();
      }
    },
    get error() {
      return error;
    },
    drain() {
      req.unpipe(parser);
      return drainRequest(req);
    },
    get ended() {
      return ended;
    },
  };
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
