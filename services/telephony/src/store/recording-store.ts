import { isDuplicateKeyError, stringIds, TenantCollection, type TenantScope } from '@voiceapi/kit';
import { Schema, type Connection } from 'mongoose';
import type { Recording } from '../carrier/carrier';

/** The largest part a read returns, and the size audio is stored in. */
export const PART_BYTES = 1024 * 1024;

interface RecordingDoc {
  /** The call id. */
  _id: string;
  tenantId: string;
  contentType: string;
  sizeBytes: number;
  parts: number;
  createdAt: Date;
}

interface PartDoc {
  /** `<callId>:<n>`: each part is read by `_id` alone. */
  _id: string;
  tenantId: string;
  data: Buffer;
}

export const recordingSchema = new Schema<RecordingDoc>(
  { _id: String, tenantId: { type: String, required: true }, contentType: { type: String, required: true }, sizeBytes: { type: Number, required: true }, parts: { type: Number, required: true }, createdAt: { type: Date, required: true } },
  { collection: 'recordings', versionKey: false },
);
export const partSchema = new Schema<PartDoc>({ _id: String, tenantId: { type: String, required: true }, data: { type: Buffer, required: true } }, { collection: 'recording_parts', versionKey: false });

/**
 * Call audio, never in the call document: a header and 1 MiB parts, like GridFS, but with every
 * part found by `_id` alone (GridFS finds chunks by `files_id`, which a store without secondary
 * indexes answers by scanning every chunk of every recording).
 */
export class RecordingStore {
  private readonly headers: TenantCollection<RecordingDoc, string>;
  private readonly parts: TenantCollection<PartDoc, string>;

  constructor(conn: Connection) {
    this.headers = new TenantCollection(conn.models.Recording ?? conn.model<RecordingDoc>('Recording', recordingSchema), stringIds, []);
    this.parts = new TenantCollection(conn.models.RecordingPart ?? conn.model<PartDoc>('RecordingPart', partSchema), stringIds, []);
  }

  /** Stores the parts, then the header that makes them visible; a replay finds them stored. */
  async save(scope: TenantScope, callId: string, rec: Recording, now: Date): Promise<void> {
    const parts = Math.max(1, Math.ceil(rec.data.length / PART_BYTES));
    for (let n = 0; n < parts; n++) {
      await ignoreDuplicate(this.parts.insert(scope, { _id: `${callId}:${n}`, data: rec.data.subarray(n * PART_BYTES, (n + 1) * PART_BYTES) }));
    }
    await ignoreDuplicate(this.headers.insert(scope, { _id: callId, contentType: rec.contentType, sizeBytes: rec.data.length, parts, createdAt: now }));
  }

  header(scope: TenantScope, callId: string): Promise<RecordingDoc | null> {
    return this.headers.findById(scope, callId);
  }

  /** Erases a call's audio: parts first, then the header, so a repeat after a crash finds what is left. */
  async erase(scope: TenantScope, callId: string): Promise<boolean> {
    const header = await this.headers.findById(scope, callId);
    if (!header) return false;
    for (let n = 0; n < header.parts; n++) await this.parts.deleteById(scope, `${callId}:${n}`);
    return this.headers.deleteById(scope, callId);
  }

  /** Up to one part's bytes from `offset`. */
  async read(scope: TenantScope, callId: string, offset: number): Promise<Buffer> {
    const n = Math.floor(offset / PART_BYTES);
    const part = await this.parts.findById(scope, `${callId}:${n}`);
    if (!part) return Buffer.alloc(0);
    // A lean read gives the driver's Binary, not a Buffer.
    const raw = part.data as Buffer | { buffer: Uint8Array };
    const bytes = Buffer.isBuffer(raw) ? raw : Buffer.from(raw.buffer);
    return bytes.subarray(offset - n * PART_BYTES);
  }
}

async function ignoreDuplicate(p: Promise<unknown>): Promise<void> {
  try {
    await p;
  } catch (err) {
    if (!isDuplicateKeyError(err)) throw err;
  }
}
