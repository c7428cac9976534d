import type { Readable } from 'node:stream';
import {
  CreateBucketCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
} from '@aws-sdk/client-s3';
import { Upload } from '@aws-sdk/lib-storage';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { Lifecycle } from '../lifecycle';
import {
  objectStoreUnavailable,
  type ByteRange,
  type ObjectMeta,
  type ObjectRead,
  type ObjectStore,
} from './object-store';

/** A ranged read that starts past the object's end (HTTP 416). */
export class ObjectRangeError extends Error {
  override name = 'ObjectRangeError';
  constructor(readonly sizeBytes: number) {
    super(`the range starts past the object's end (${sizeBytes} bytes)`);
  }
}

export interface S3Settings {
  OBJECT_STORE_ENDPOINT?: string;
  OBJECT_STORE_REGION: string;
  OBJECT_STORE_BUCKET: string;
  OBJECT_STORE_FORCE_PATH_STYLE: boolean;
  OBJECT_STORE_ACCESS_KEY_ID?: string;
  OBJECT_STORE_SECRET_ACCESS_KEY?: string;
}

/** Objects larger than this go up in parts (S3's multipart upload), a part in memory at a time. */
const MULTIPART_ABOVE_BYTES = 64 * 1024 * 1024;
const PART_BYTES = 8 * 1024 * 1024;

/** The object store over the S3 API (AWS SDK v3, SigV4): AWS S3 or any S3-compatible server. */
export class S3ObjectStore implements ObjectStore {
  readonly bucket: string;
  private readonly s3: S3Client;

  constructor(
    settings: S3Settings,
    private readonly opts: { multipartAboveBytes?: number; partBytes?: number } = {},
  ) {
    this.bucket = settings.OBJECT_STORE_BUCKET;
    const keys = settings.OBJECT_STORE_ACCESS_KEY_ID &&
      settings.OBJECT_STORE_SECRET_ACCESS_KEY && {
        accessKeyId: settings.OBJECT_STORE_ACCESS_KEY_ID,
        secretAccessKey: settings.OBJECT_STORE_SECRET_ACCESS_KEY,
      };
    this.s3 = new S3Client({
      region: settings.OBJECT_STORE_REGION,
      ...(settings.OBJECT_STORE_ENDPOINT && { endpoint: settings.OBJECT_STORE_ENDPOINT }),
      forcePathStyle: settings.OBJECT_STORE_FORCE_PATH_STYLE,
      ...(keys && { credentials: keys }),
      // Else a streamed body gets a trailing checksum that not every S3-compatible server knows.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
  }

  put(key: string, body: Buffer | Readable, meta: ObjectMeta): Promise<void> {
    return this.putObject(key, body, meta).catch((err: unknown) => {
      throw objectStoreUnavailable(err);
    });
  }

  private async putObject(key: string, body: Buffer | Readable, meta: ObjectMeta): Promise<void> {
    const params = { Bucket: this.bucket, Key: key, Body: body, ContentType: meta.contentType };
    if (meta.sizeBytes <= (this.opts.multipartAboveBytes ?? MULTIPART_ABOVE_BYTES)) {
      await this.s3.send(new PutObjectCommand({ ...params, ContentLength: meta.sizeBytes }));
      return;
    }
    // One part at a time: memory stays at a part or two, whatever the object's size.
    await new Upload({
      client: this.s3,
      params,
      queueSize: 1,
      partSize: this.opts.partBytes ?? PART_BYTES,
      leavePartsOnError: false,
    }).done();
  }

  async get(key: string, range?: ByteRange): Promise<ObjectRead | null> {
    try {
      const res = await this.s3.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: key,
          ...(range && { Range: `bytes=${range.start}-${range.end ?? ''}` }),
        }),
      );
      const total = res.ContentRange ? Number(res.ContentRange.split('/')[1]) : res.ContentLength!;
      return {
        body: res.Body as Readable,
        contentType: res.ContentType ?? 'application/octet-stream',
        sizeBytes: total,
        contentLength: res.ContentLength ?? 0,
        ...(range && res.ContentRange && { contentRange: res.ContentRange }),
      };
    } catch (err) {
      if (status(err) === 404) return null;
      if (status(err) === 416) {
        const meta = await this.head(key);
        if (!meta) return null;
        throw new ObjectRangeError(meta.sizeBytes);
      }
      throw objectStoreUnavailable(err);
    }
  }

  async getAll(key: string): Promise<Buffer | null> {
    const read = await this.get(key);
    if (!read) return null;
    const chunks: Buffer[] = [];
    for await (const chunk of read.body) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  async head(key: string): Promise<ObjectMeta | null> {
    try {
      const res = await this.s3.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return { contentType: res.ContentType ?? 'application/octet-stream', sizeBytes: res.ContentLength ?? 0 };
    } catch (err) {
      if (status(err) === 404) return null;
      throw objectStoreUnavailable(err);
    }
  }

  async delete(key: string): Promise<void> {
    // S3 answers 204 whether or not the key existed.
    await this.s3.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key })).catch((err: unknown) => {
      throw objectStoreUnavailable(err);
    });
  }

  signedReadUrl(key: string, expiresInSeconds: number): Promise<string> {
    return getSignedUrl(this.s3, new GetObjectCommand({ Bucket: this.bucket, Key: key }), {
      expiresIn: expiresInSeconds,
    });
  }

  async ensureBucket(create: boolean): Promise<void> {
    try {
      await this.s3.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (err) {
      if (status(err) !== 404) throw err;
      if (!create)
        throw new Error(
          `the object store has no bucket '${this.bucket}': create it, or set OBJECT_STORE_CREATE_BUCKET=true`,
        );
      await this.s3.send(new CreateBucketCommand({ Bucket: this.bucket })).catch((e: unknown) => {
        // Another replica made it first.
        if (!(e instanceof S3ServiceException && e.name === 'BucketAlreadyOwnedByYou')) throw e;
      });
    }
  }

  destroy(): void {
    this.s3.destroy();
  }
}

const status = (err: unknown): number | undefined =>
  (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;

/** The bucket is checked (or made) before the process serves. */
export async function openObjectStore(
  settings: S3Settings & { OBJECT_STORE_CREATE_BUCKET: boolean },
  lifecycle: Lifecycle,
): Promise<S3ObjectStore> {
  const store = new S3ObjectStore(settings);
  lifecycle.onStop('object store client', () => store.destroy());
  await store.ensureBucket(settings.OBJECT_STORE_CREATE_BUCKET);
  return store;
}
