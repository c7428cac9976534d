import { Schema, type Connection, type Model } from 'mongoose';
import type { TenantScope } from '../context';
import { stringIds, TenantCollection } from './tenant-collection';

/** The largest part a read returns, and the size content is stored in. */
export const BLOB_PART_BYTES = 1024 * 1024;

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

/** Content stored by releases before the object store (decision 0136): only read and erased now. */
export class BlobStore {
  private readonly headers: TenantCollection<BlobHeader, string>;
  private readonly parts: TenantCollection<PartDoc, string>;

  constructor(conn: Connection, collection: string, partsCollection = `${collection}_parts`) {
    this.headers = new TenantCollection(model(conn, collection, headerSchema), stringIds, []);
    this.parts = new TenantCollection(model(conn, partsCollection, partSchema), stringIds, []);
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

  /** The whole content, or null; for content a caller bounds by size. */
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
