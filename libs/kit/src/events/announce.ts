import { DomainError } from '../errors';
import { mongo } from 'mongoose';
import type { EventRecord } from './kafka';

/**
 * How to tell whether a held events' write happened: `filter` in `collection` is `present` (or `absent`) once it did.
 * Stored with the events, so the writer or the relay settling them reads the same thing (`TenantCollection.readBack`).
 * `always`: sent either way, for events that only make readers look again; `why` says so for reviewers.
 */
export type ReadBack =
  | { collection: string; filter: Record<string, unknown>; applied: 'present' | 'absent' }
  | { applied: 'always'; why: string };

/** What `announce` needs besides the events and the write. */
export interface AnnounceOptions<R, E = EventRecord> {
  /** Whether the write's result is the change announced (default: always); false (matched nothing) drops the events. */
  applied?: (result: R) => boolean;
  /** How to read back whether the write happened, for all events or per event (a batch written part-way). */
  readBack: ReadBack | ((event: E) => ReadBack);
  /** Every event's key is new (see `Outbox.addRecords`). */
  freshKeys?: boolean;
  /**
   * Events sent after the write instead of stored before it (decision 0149), for events their service announces
   * again when it takes the relay's lease. Only while this replica relays with nothing waiting; else stored.
   */
  atOnce?: (event: E) => boolean;
}

/**
 * A write and its events as one step: no event without its change, no change without its event. Use cases reach it
 * through their ports (`usecases/ports.ts`), implemented in `events/publish.ts`.
 */
export interface Announcer {
  announce<R>(events: readonly EventRecord[], write: () => Promise<R>, opts: AnnounceOptions<R>): Promise<R>;
}

/** A `DomainError` is a refusal, raised before any change; anything else may follow an applied write: read back. */
export const refusedBeforeWriting = (err: unknown): boolean => err instanceof DomainError;

const { EJSON } = mongo.BSON;

/** What `announceWith` does with held events: the outbox's store, or a test's. */
export interface HeldEvents {
  /** Stores the events held with their read-backs; answers the ids an earlier try stored (its write decides them). */
  hold(
    events: readonly EventRecord[],
    readBacks: readonly ReadBack[],
    freshKeys: boolean,
  ): Promise<ReadonlySet<string>>;
  release(ids: readonly string[]): Promise<void>;
  discard(ids: readonly string[]): Promise<void>;
  happened(readBack: ReadBack): Promise<boolean>;
  warn(fields: Record<string, unknown>, message: string): void;
}

/**
 * `Announcer.announce` over held events: stored held, then the write runs; they are released if it applied, discarded
 * if refused, else settled by reading back. Anything left held is settled by the relay when its hold ends
 * (decision 0117), so a failure after the write never fails the caller.
 */
export async function announceWith<R>(
  held: HeldEvents,
  events: readonly EventRecord[],
  write: () => Promise<R>,
  opts: AnnounceOptions<R>,
): Promise<R> {
  if (events.length === 0) return write();
  const { readBack } = opts;
  const readBacks = events.map((e) => (typeof readBack === 'function' ? readBack(e) : readBack));
  const ids = events.map((e) => e.eventId);
  const before = await held.hold(events, readBacks, opts.freshKeys ?? false);
  // An earlier try's event is never discarded here: this write not applying says nothing of that try's.
  const discard = (of: readonly string[]) => held.discard(of.filter((id) => !before.has(id)));
  let result: R;
  try {
    result = await write();
  } catch (err) {
    await (refusedBeforeWriting(err) ? discard(ids) : settle(held, ids, readBacks, discard)).catch(
      (settleErr: unknown) =>
        held.warn(
          { err: settleErr, events: ids },
          "a failed write's events are left held; the relay settles them when their hold ends",
        ),
    );
    throw err;
  }
  await ((opts.applied?.(result) ?? true) ? held.release(ids) : discard(ids)).catch((err: unknown) =>
    held.warn({ err, events: ids }, 'events left held after their write; the relay settles them when their hold ends'),
  );
  return result;
}

/** Reads back each event's write (once per distinct read-back); releases those that happened, discards the rest. */
async function settle(
  held: HeldEvents,
  ids: readonly string[],
  readBacks: readonly ReadBack[],
  discard: (ids: readonly string[]) => Promise<void>,
): Promise<void> {
  const reads = new Map<string, Promise<boolean>>();
  const applied = await Promise.all(
    readBacks.map((rb) => {
      const key = EJSON.stringify(rb, { relaxed: false });
      if (!reads.has(key)) reads.set(key, held.happened(rb));
      return reads.get(key)!;
    }),
  );
  await held.release(ids.filter((_, i) => applied[i]));
  await discard(ids.filter((_, i) => !applied[i]));
}
