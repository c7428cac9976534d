import { Schema, type Connection, type Model } from 'mongoose';
import { Coalescer } from '../coalesce';
import type { TenantScope } from '../context';
import { stringIds, TenantCollection } from './tenant-collection';

/** The largest part a read returns, and the size content is stored in. */
export const BLOB_PART_BYTES = 1024 * 1024;
/** Parts inserted in one write at most (well below the 48 MB a MongoDB message may carry). */
const SAVE_BATCH_BYTES = 8 * 1024 * 1024;

export interface BlobHeader {
  /** The blob's id, chosen by the owner (a call id, a file id). */
  _id: string;
  tenantId: string;
  contentType: string;
  sizeBytes: number;
  parts: number;
  createdAt: Date;
}

interface PartDoc {
  /** `<blobId>:<n>`: each part is read by `_id` alone. */
  _id: string;
  tenantId: string;
  data: Buffer;
}

/** A blob waiting to be saved with the others that arrived while a save was under way. */
interface PendingBlob {
  tenantId: string;
  id: string;
  blob: { contentType: string; data: Buffer };
  now: Date;
}

/**
 * Binary content kept out of the documents that describe it (call audio, uploaded files): a header
 * and 1 MiB parts, like GridFS, but with every part found by `_id` alone (GridFS finds chunks by
 * `files_id`, which a store without secondary indexes answers by scanning every chunk of every
 * file). Parts are written before the header that makes them visible, so a crash leaves no
 * half-visible blob, and a replay of the same id finds what it wrote. Blobs saved at the same time
 * (the recordings of calls ending together) are written together: their parts in inserts of up
 * to 8 MB, then their headers in one.
 */
export class BlobStore {
  private readonly headers: TenantCollection<BlobHeader, string>;
  private readonly parts: TenantCollection<PartDoc, string>;
  private readonly saves = new Coalescer<PendingBlob, void>((blobs) => this.saveTogether(blobs));

  /** `collection` names the headers; the parts live in `partsCollection`. */
  constructor(conn: Connection, collection: string, partsCollection = `${collection}_parts`) {
    this.headers = new TenantCollection(model(conn, collection, headerSchema), stringIds, []);
    this.parts = new TenantCollection(model(conn, partsCollection, partSchema), stringIds, []);
  }

  /** Stores the blob under `id` (a replay of the same id keeps what is there). */
  save(scope: TenantScope, id: string, blob: { contentType: string; data: Buffer }, now: Date): Promise<void> {
    return this.saves.run({ tenantId: scope.tenantId, id, blob, now });
  }

  private async saveTogether(blobs: PendingBlob[]): Promise<void[]> {
    const partCount = (b: PendingBlob) => Math.max(1, Math.ceil(b.blob.data.length / BLOB_PART_BYTES));
    const parts = blobs.flatMap((b) =>
      Array.from({ length: partCount(b) }, (_, n) => ({
        _id: `${b.id}:${n}`,
        tenantId: b.tenantId,
        data: b.blob.data.subarray(n * BLOB_PART_BYTES, (n + 1) * BLOB_PART_BYTES),
      })),
    );
    const partWriter = this.parts.crossTenant(
      'the parts of blobs saved together are inserted together, each with its tenant',
    );
    for (let i = 0; i < parts.length;) {
      let bytes = 0;
      let j = i;
      while (j < parts.length && (j === i || bytes + parts[j]!.data.length <= SAVE_BATCH_BYTES))
        bytes += parts[j++]!.data.length;
      await partWriter.insertManyUnordered(parts.slice(i, j));
      i = j;
    }
    await this.headers
      .crossTenant('the headers of blobs saved together are inserted together, each with its tenant')
      .insertManyUnordered(
        blobs.map((b) => ({
          _id: b.id,
          tenantId: b.tenantId,
          contentType: b.blob.contentType,
          sizeBytes: b.blob.data.length,
          parts: partCount(b),
          createdAt: b.now,
        })),
      );
    return blobs.map(() => undefined);
  }

  header(scope: TenantScope, id: string): Promise<BlobHeader | null> {
    return this.headers.findById(scope, id);
  }

  /** Erases the blob: parts first, then the header, so a repeat after a crash finds what is left. */
  async erase(scope: TenantScope, id: string): Promise<boolean> {
    const header = await this.headers.findById(scope, id);
    if (!header) return false;
    for (let n = 0; n < header.parts; n++) await this.parts.deleteById(scope, `${id}:${n}`);
    return this.headers.deleteById(scope, id);
  }

  /** Up to one part's bytes from `offset` (empty past the end). */
  async read(scope: TenantScope, id: string, offset: number): Promise<Buffer> {
    const n = Math.floor(offset / BLOB_PART_BYTES);
    const part = await this.parts.findById(scope, `${id}:${n}`);
    if (!part) return Buffer.alloc(0);
    // A lean read gives the driver's Binary, not a Buffer.
    const raw = part.data as Buffer | { buffer: Uint8Array };
    const bytes = Buffer.isBuffer(raw) ? raw : Buffer.from(raw.buffer);
    return bytes.subarray(offset - n * BLOB_PART_BYTES);
  }

  /** The whole content, or null when there is no such blob; for content a caller bounds by size. */
  async readAll(scope: TenantScope, id: string): Promise<Buffer | null> {
    const header = await this.header(scope, id);
    if (!header) return null;
    const chunks: Buffer[] = [];
    for (let n = 0; n < header.parts; n++) chunks.push(await this.read(scope, id, n * BLOB_PART_BYTES));
    return Buffer.concat(chunks);
  }
}

const headerSchema = () =>
  new Schema<BlobHeader>(
    {
      _id: String,
      tenantId: { type: String, required: true },
      contentType: { type: String, required: true },
      sizeBytes: { type: Number, required: true },
      parts: { type: Number, required: true },
      createdAt: { type: Date, required: true },
    },
    { versionKey: false },
  );
const partSchema = () =>
  new Schema<PartDoc>(
    { _id: String, tenantId: { type: String, required: true }, data: { type: Buffer, required: true } },
    { versionKey: false },
  );

function model<T>(conn: Connection, collection: string, schema: () => Schema<T>): Model<T> {
  const name = `blob:${collection}`;
  return (conn.models[name] as Model<T> | undefined) ?? conn.model<T>(name, schema(), collection);
}
