import { type TenantScope } from '@voiceapi/kit/grpc';
import { BLOB_PART_BYTES, BlobStore } from '@voiceapi/kit/mongo';
import { type ObjectStore } from '@voiceapi/kit/objects';
import type { Connection } from 'mongoose';
import type { Recording } from '../carrier/carrier';
import type { RecordingRef } from '../domain/call';

/** The largest part `read` returns (what one OpenRecording answer carries). */
export const PART_BYTES = BLOB_PART_BYTES;

/**
 * Call audio in object storage, keyed by tenant and call (so erasure needs no row), streamed, never whole in memory.
 * Pre-1.3 recordings (`hasRecording` without `recording`) stay readable and erasable in the store (decision 0136).
 */
export class RecordingStore {
  private readonly legacy: BlobStore;

  constructor(
    conn: Connection,
    private readonly objects: ObjectStore,
  ) {
    this.legacy = new BlobStore(conn, 'recordings', 'recording_parts');
  }

  static keyOf(scope: TenantScope, callId: string): string {
    return `${scope.tenantId}/${callId}.wav`;
  }

  /** Streams the carrier's recording into the bucket; answers what the call row keeps of it. */
  async save(scope: TenantScope, callId: string, rec: Recording, now: Date): Promise<RecordingRef> {
    const key = RecordingStore.keyOf(scope, callId);
    await this.objects.put(key, rec.open(), { contentType: rec.contentType, sizeBytes: rec.sizeBytes });
    const { contentType, sizeBytes, durationSeconds } = rec;
    return { key, contentType, sizeBytes, durationSeconds, storedAt: now };
  }

  /** A presigned address of the audio, valid for `seconds`: the gateway reads it (and its ranges) there. */
  signedUrl(ref: RecordingRef, seconds: number): Promise<string> {
    return this.objects.signedReadUrl(ref.key, seconds);
  }

  /** Up to one part's bytes from `offset`: from the bucket, or a pre-1.3 recording's parts. */
  async read(scope: TenantScope, callId: string, ref: RecordingRef | undefined, offset: number): Promise<Buffer> {
    if (!ref) return (await this.legacy.read(scope, callId, offset)).subarray(0, PART_BYTES);
    const read = await this.objects.get(ref.key, {
      start: offset,
      end: Math.min(ref.sizeBytes, offset + PART_BYTES) - 1,
    });
    if (!read) return Buffer.alloc(0);
    const chunks: Buffer[] = [];
    for await (const chunk of read.body) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks);
  }

  /** A pre-1.3 recording's description (content type and size), or null. */
  legacyHeader(scope: TenantScope, callId: string): Promise<{ contentType: string; sizeBytes: number } | null> {
    return this.legacy.header(scope, callId);
  }

  /** Erases a call's audio wherever it is (a deleted contact's calls); erasing again finds nothing. */
  async erase(scope: TenantScope, callId: string): Promise<void> {
    await this.objects.delete(RecordingStore.keyOf(scope, callId));
    await this.legacy.erase(scope, callId);
  }
}
