import { DomainError } from '../errors';
import { mongo } from 'mongoose';
import type { EventRecord } from './kafka';

/**
 * How to tell, by reading the store, whether a write announced by held events happened: the
 * document `filter` finds in `collection` is `present` (or `absent`) once it did. It is stored
 * with the held events, so whoever settles them (the writer when its write failed part-way, or
 * the relay when the writer never came back) reads the same thing. Stores make these
 * (`TenantCollection.readBack`), so the filter carries the tenant and the collection's own ids.
 *
 * `always`: the events go out whether or not the write happened, for events whose only effect is
 * to make readers look again (a cache dropped); `why` says so where a reviewer sees it.
 */
export type ReadBack =
  | { collection: string; filter: Record<string, unknown>; applied: 'present' | 'absent' }
  | { applied: 'always'; why: string };

/** What `announce` needs besides the events and the write. */
export interface AnnounceOptions<R, E = EventRecord> {
  /** Whether the write's result is the change announced (default: always). False (an update that matched nothing, a delete of nothing) drops the events. */
  applied?: (result: R) => boolean;
  /** How to read back whether the write happened, for all the events or for each one (a batch that may be written part-way). */
  readBack: ReadBack | ((event: E) => ReadBack);
  /** Every event's key is new (see `Outbox.addRecords`). */
  freshKeys?: boolean;
  /**
   * Events sent once the write is done instead of stored before it (decision 0149), for events their
   * service announces again when it takes the relay's lease (a crash of the relay's holder between
   * the write and the send is what loses one). Only while this replica relays with nothing waiting
   * in its outbox; otherwise stored like the rest.
   */
  atOnce?: (event: E) => boolean;
}

/**
 * A write and the events it announces, as one step: no event goes out without its change, and no
 * change stays without its event. Use cases reach it through their ports (`usecases/ports.ts`),
 * implemented in `events/publish.ts`; the kit's `Outbox` is one.
 */
export interface Announcer {
  announce<R>(events: readonly EventRecord[], write: () => Promise<R>, opts: AnnounceOptions<R>): Promise<R>;
}

/**
 * A write that threw this did not happen: a `DomainError` is a refusal (a rule, a missing
 * thing), which a write raises before it changes anything. Anything else (a store error, a
 * timeout, a dropped connection) may have come after the store applied the write: read back.
 */
export const refusedBeforeWriting = (err: unknown): boolean => err instanceof DomainError;

const { EJSON } = mongo.BSON;

/** What `announceWith` does with held events: the outbox's store, or a test's. */
export interface HeldEvents {
  /**
   * Stores the events held, each with its read-back; answers the ids stored before (an earlier
   * try's events: that try's write decides them, or the relay's read-back when its hold ends).
   */
  hold(
    events: readonly EventRecord[],
    readBacks: readonly ReadBack[],
    freshKeys: boolean,
  ): Promise<ReadonlySet<string>>;
  release(ids: readonly string[]): Promise<void>;
  discard(ids: readonly string[]): Promise<void>;
  /** Whether the write a read-back describes happened, read from the store. */
  happened(readBack: ReadBack): Promise<boolean>;
  warn(fields: Record<string, unknown>, message: string): void;
}

/**
 * `Announcer.announce` over held events. The events are stored held, with how to read the write
 * back; then the write runs, and:
 * - it resolved: released if `applied(result)`, else discarded (it matched nothing);
 * - it threw a refusal (`refusedBeforeWriting`): discarded;
 * - it threw anything else, so it may have happened: the store is read back now, and each event
 *   released or discarded by what it finds; the write's error is rethrown either way.
 * Whatever is left held (the read-back failed, the release or discard failed, the process died)
 * is settled when its hold ends by the same read, in the outbox relay (decision 0117). A failure
 * after the write never fails the caller: the write is done and its events are safe.
 */
export async function announceWith<R>(
  held: HeldEvents,
  events: readonly EventRecord[],
  write: () => Promise<R>,
  opts: AnnounceOptions<R>,
): Promise<R> {
  // Nothing to announce (no reader wants this change): the write alone, nothing held or released.
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

/** Reads back whether each event's write happened (once per distinct read-back); releases those whose did, discards the rest. */
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
