import type { Readable } from 'node:stream';
import { commonReasons, DomainError } from '../errors';

/**
 * Binary content (call audio, uploads) kept in object storage; the operational store keeps only its key,
 * size and type. One adapter, the S3 API (`S3ObjectStore`), tested against a real S3 server (decision 0136).
 */
export interface ObjectStore {
  /** A service owns its bucket. */
  readonly bucket: string;
  /** A stream is sent as read, never held whole, so its length must be given; a failed put leaves no object. */
  put(key: string, body: Buffer | Readable, meta: ObjectMeta): Promise<void>;
  /** The object, or the bytes `range` names (`end` inclusive, as HTTP's Range), as a stream; null when absent. */
  get(key: string, range?: ByteRange): Promise<ObjectRead | null>;
  /** The whole object, for content a caller bounds by size; null when absent. */
  getAll(key: string): Promise<Buffer | null>;
  head(key: string): Promise<ObjectMeta | null>;
  /** Deleting an object that is gone is not an error. */
  delete(key: string): Promise<void>;
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

const UNREACHABLE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENOTFOUND',
  'EAI_AGAIN',
]);

/** The store unreachable, timing out or answering 5xx → `service_unavailable` (retry); anything else as it is. */
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
