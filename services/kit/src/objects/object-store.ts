import type { Readable } from 'node:stream';

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
