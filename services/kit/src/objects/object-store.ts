import type { Readable } from 'node:stream';
import { commonReasons, DomainError } from '../errors';

/**
 * Binary content kept out of the operational store (call audio, uploaded files and their text),
 * the way every voice platform keeps it: in object storage, reached through this port. The
 * operational store keeps only what describes an object (its key, size, type). One adapter in
 * production, the S3 API (`S3ObjectStore`); tests run it against a real S3 server (decision 0136).
 */
export interface ObjectStore {
  /** The bucket this store writes to (a service owns its bucket). */
  readonly bucket: string;
  /**
   * Stores `body` under `key`, replacing what was there. A stream is sent as it is read, never held
   * whole, so its length must be given; a failed put leaves no object (S3 puts are atomic).
   */
  put(key: string, body: Buffer | Readable, meta: ObjectMeta): Promise<void>;
  /** The object, or the bytes `range` names (`end` inclusive, as HTTP's Range), as a stream; null when absent. */
  get(key: string, range?: ByteRange): Promise<ObjectRead | null>;
  /** The whole object, for content a caller bounds by size; null when absent. */
  getAll(key: string): Promise<Buffer | null>;
  /** What the object is, or null when absent. */
  head(key: string): Promise<ObjectMeta | null>;
  /** Deletes the object; deleting one that is gone is not an error. */
  delete(key: string): Promise<void>;
  /** A presigned GET address of the object, valid for `expiresInSeconds`: it carries its authorisation. */
  signedReadUrl(key: string, expiresInSeconds: number): Promise<string>;
  /** Checks the bucket is there (a start-up check); creates it when `create` (local servers, tests). */
  ensureBucket(create: boolean): Promise<void>;
}

export interface ObjectMeta {
  contentType: string;
  sizeBytes: number;
}

export interface ByteRange {
  start: number;
  /** Inclusive; the object's end when absent. */
  end?: number;
}

export interface ObjectRead extends ObjectMeta {
  body: Readable;
  /** Bytes in `body` (the range's length for a ranged read). */
  contentLength: number;
  /** `bytes start-end/size` for a ranged read. */
  contentRange?: string;
}

/** Network failures that say the object store cannot be reached now (as opposed to a fault of ours). */
const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/**
 * The object store could not answer now (unreachable, timing out, or its own 5xx): callers get
 * 503 `service_unavailable` and try again, as when the operational store is away; anything else
 * (a bug of ours, a 4xx) is answered as it is. The original stays the error's cause, for logs.
 */
export function objectStoreUnavailable(err: unknown): unknown {
  if (err instanceof DomainError) return err;
  let away = false;
  for (
    let e = err as
        { code?: unknown; name?: unknown; cause?: unknown; $metadata?: { httpStatusCode?: number } } | undefined,
      n = 0;
    e && typeof e === 'object' && n < 5;
    e = e.cause as typeof e, n++
  ) {
    const status = e.$metadata?.httpStatusCode;
    if (
      // The SDK's retries ended without any HTTP answer, or with the store's own 5xx.
      (e.$metadata !== undefined && (status === undefined || status >= 500)) ||
      (typeof e.code === 'string' && UNREACHABLE.has(e.code)) ||
      e.name === 'TimeoutError'
    )
      away = true;
  }
  if (!away) return err;
  const u = commonReasons.error('service_unavailable', 'the object store is unavailable, retry shortly');
  return new DomainError(u.reasonCode, u.message, { ...u.opts, cause: err });
}
