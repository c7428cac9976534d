import { countFallback } from '@voiceapi/kit/errors';
import { scopeOfRecord } from '@voiceapi/kit/grpc';
import { type Logger } from '@voiceapi/kit/service';
import type { CarrierAdapter, Recording } from '../carrier/carrier';
import type { Call, RecordingRef } from '../domain/call';
import type { CallStore } from '../store/call-store';
import type { RecordingStore } from '../store/recording-store';

/** A recording object storage could not take is stored again from this long after the call's end… */
export const STORE_AGAIN_AFTER_MS = 5_000;
/** …then at twice the wait each time, up to this… */
const STORE_AGAIN_AT_MOST_MS = 10 * 60_000;
/** …for as long as a carrier keeps a recording at its own address; after that the call has none. */
const STORE_AGAIN_FOR_MS = 3 * 24 * 3_600_000;

export interface RecordingKeeperDeps {
  calls: CallStore;
  recordings: RecordingStore;
  carrier: CarrierAdapter;
  log: Logger;
  now: () => Date;
  /** Recordings are removed this many days after they were stored; unset: kept. */
  retentionDays?: number;
}

/** What a call that ended with a recording keeps: where it is, or when storing it is tried again. */
export type StoredOrDue = { recording: RecordingRef } | { recordingDueAt: Date };

/** Recordings from the carrier into object storage (retried while it is away), removed when retention ends. */
export class RecordingKeeper {
  constructor(private readonly d: RecordingKeeperDeps) {}

  /** Stores a call's recording as it ends; when the store cannot take it, the call is due to be tried again. */
  async store(call: Call, rec: Recording): Promise<StoredOrDue> {
    try {
      return { recording: await this.d.recordings.save(scopeOfRecord(call.tenantId), call.id, rec, this.d.now()) };
    } catch (err) {
      countFallback({ dependency: 'objects', operation: 'PutRecording' }, err);
      this.d.log.warn({ err, callId: call.id }, 'the recording could not be stored: tried again shortly');
      return { recordingDueAt: new Date(this.d.now().getTime() + STORE_AGAIN_AFTER_MS) };
    }
  }

  /** Stores the recordings that are due again (fetched again from the carrier); the number handled. */
  async storeDue(limit: number): Promise<number> {
    const due = await this.d.calls.dueForRecording(this.d.now(), limit);
    await Promise.all(due.map((call) => this.storeAgain(call)));
    return due.length;
  }

  private async storeAgain(call: Call): Promise<void> {
    const scope = scopeOfRecord(call.tenantId);
    const now = this.d.now();
    const endedAt = (call.endedAt ?? now).getTime();
    const rec =
      call.carrierCallId && now.getTime() - endedAt < STORE_AGAIN_FOR_MS
        ? this.d.carrier.recordingOf({
            callId: call.id,
            carrierCallId: call.carrierCallId,
            durationSeconds: call.durationSeconds,
          })
        : undefined;
    if (!rec) {
      this.d.log.warn({ callId: call.id }, 'the carrier no longer has the recording: the call has none');
      await this.d.calls.deferRecording(scope, call.id, undefined);
      return;
    }
    let ref: RecordingRef;
    try {
      ref = await this.d.recordings.save(scope, call.id, rec, now);
    } catch (err) {
      countFallback({ dependency: 'objects', operation: 'PutRecording' }, err);
      const waited = now.getTime() - endedAt;
      const wait = Math.min(Math.max(waited, STORE_AGAIN_AFTER_MS), STORE_AGAIN_AT_MOST_MS);
      await this.d.calls.deferRecording(scope, call.id, new Date(now.getTime() + wait));
      return;
    }
    // Erased while it was written: the object goes too.
    if (!(await this.d.calls.setRecording(scope, call.id, ref))) await this.d.recordings.erase(scope, call.id);
  }

  /** Removes a call's recording, object first (after a crash in between, the row still names it). */
  async discard(call: Call): Promise<void> {
    const scope = scopeOfRecord(call.tenantId);
    await this.d.recordings.erase(scope, call.id);
    await this.d.calls.forgetRecording(scope, call.id);
  }

  /** Removes the recordings whose retention period has ended (none while recordings are kept); the number removed. */
  async expire(limit: number): Promise<number> {
    if (this.d.retentionDays === undefined) return 0;
    const cutoff = new Date(this.d.now().getTime() - this.d.retentionDays * 86_400_000);
    const old = await this.d.calls.recordedBefore(cutoff, limit);
    for (const call of old) await this.discard(call);
    return old.length;
  }
}
