import { BLOB_PART_BYTES, BlobStore, type BlobHeader, type TenantScope } from '@voiceapi/kit';
import type { Connection } from 'mongoose';
import type { Recording } from '../carrier/carrier';

/** The largest part a read returns, and the size audio is stored in. */
export const PART_BYTES = BLOB_PART_BYTES;

/** Call audio, never in the call document: the kit's blob store (header + 1 MiB parts by `_id`), keyed by call id. */
export class RecordingStore {
  private readonly blobs: BlobStore;

  constructor(conn: Connection) {
    this.blobs = new BlobStore(conn, 'recordings', 'recording_parts');
  }

  /** Stores the parts, then the header that makes them visible; a replay finds them stored. */
  save(scope: TenantScope, callId: string, rec: Recording, now: Date): Promise<void> {
    return this.blobs.save(scope, callId, { contentType: rec.contentType, data: rec.data }, now);
  }

  header(scope: TenantScope, callId: string): Promise<BlobHeader | null> {
    return this.blobs.header(scope, callId);
  }

  /** Erases a call's audio (a deleted contact's calls). */
  erase(scope: TenantScope, callId: string): Promise<boolean> {
    return this.blobs.erase(scope, callId);
  }

  /** Up to one part's bytes from `offset`. */
  read(scope: TenantScope, callId: string, offset: number): Promise<Buffer> {
    return this.blobs.read(scope, callId, offset);
  }
}
