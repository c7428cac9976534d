// Over 300 lines because it keeps one job, an event's way into the outbox; its documents, relay and gauges live apart.
import type { Connection, Model } from 'mongoose';
import { mongo } from 'mongoose';
import { Coalescer } from '../coalesce';
import type { Logger } from '../logger';
import { insertAsBuilt, isDuplicateKeyError, modelOf } from '../mongo/connect';
import { withTimeout } from '../lifecycle';
import { Lease } from '../mongo/lease';
import { declareQueries } from '../mongo/query-check';
import {
  announceWith,
  refusedBeforeWriting,
  type AnnounceOptions,
  type Announcer,
  type HeldEvents,
  type ReadBack,
} from './announce';
import type { EventRecord } from './kafka';
import { OutboxRelay, readBackHappened } from './outbox-relay';
import {
  OutboxSequence,
  outboxQueryShapes,
  outboxSchema,
  parkedSchema,
  type OutboxDoc,
  type ParkedDoc,
} from './outbox-store';
import { eventRecord, type EventPublisher } from './publisher';
import type { MessageCodec } from './stream';
import type { ObservedGauge } from '../telemetry/metrics';
import { outboxGauges } from './outbox-gauges';

export { outboxQueryShapes, outboxSchema } from './outbox-store';

export interface OutboxOptions {
  /** Names this replica as a relay lease holder (unique per replica). */
  instanceId: string;
  /**
   * How often a lease holder alone looks without being woken (stores and releases here wake it at once, a held
   * event at the end of its hold): the safety net and the publish retry (30 s).
   */
  intervalMs?: number;
  /** How often it looks while another replica contends for the lease: bounds their wait (250 ms; decision 0141). */
  lookMs?: number;
  /**
   * How long a held event waits for its writer before the relay reads back its write (again this long later while
   * that read fails). Longer than any write.
   */
  holdMs?: number;
  /**
   * A service with singleton jobs passes their lease, so its replicas renew one lease, not two (and the relay runs
   * where those jobs run). Default: an `outbox-relay` lease of `leaseMs` (the kit's `LEASE_TTL_MS`).
   */
  lease?: Lease;
  leaseMs?: number;
  /** The service relaying, for the relay worker's lag metric. */
  service?: string;
}

/** One `addRecords` call waiting to be stored. */
interface PendingAdd {
  records: readonly EventRecord[];
  /** Held events: each record's read-back, in order. Absent: published as soon as the relay sees them. */
  readBacks?: readonly ReadBack[];
  /** Every record's key is new (see `addRecords`): its numbers may come from this process's block. */
  freshKeys: boolean;
}

const { EJSON } = mongo.BSON;

/** An event larger than this is refused when it is added, not discovered when it cannot be sent. */
export const MAX_EVENT_BYTES = 256 * 1024;
/** How often the relay's lease holder looks for another replica's events (decision 0141). */
const RELAY_LOOK_MS = 250;
/** How often a relay alone on its lease looks all the same. */
const RELAY_SAFETY_NET_MS = 30_000;
/** At most this many events released in memory and not yet published (Kafka away); past it, releases are written. */
const MAX_RELEASED_HERE = 10_000;
/** How long `publishOrAdd` waits for Kafka (healthy: milliseconds) before it stores the events instead. */
const PUBLISH_NOW_MS = 500;

/**
 * Transactional outbox without transactions (decision 0110): an event is stored before (`hold`) or with the change
 * it announces; one replica (a lease) relays in store order, so each key's events reach Kafka in order, and deletes
 * each once Kafka has it. Delivery is at least once, under the same ids.
 */
export class Outbox implements Announcer {
  readonly model: Model<OutboxDoc>;
  readonly parked: Model<ParkedDoc>;
  private readonly sequence: OutboxSequence;
  private readonly lease: Lease;
  private readonly relay: OutboxRelay;
  private readonly holdMs: number;
  private gauges: ObservedGauge[] = [];
  /** Held events released here while this replica relays: published with no release written (decision 0143). */
  private readonly releasedHere = new Set<string>();
  private stopping = false;
  /** Inserts begun here, and those unanswered: whether a pass that found the outbox empty could have missed one. */
  private inserts = 0;
  private insertsUnderway = 0;
  /**
   * The last pass found the outbox empty, no insert here since: `publishOrAdd` may send at once (decision 0144).
   * False again with any insert here, any event a pass finds, a failed send or pass.
   */
  private drained = false;
  /** The relay's last pass published what it read (not while Kafka is away): only then are releases kept in memory. */
  private relayWorks = true;
  /** The releases kept in memory being written to the store (the lease lost, or given up at stop). */
  private handingOver: Promise<void> = Promise.resolve();
  /** Adds arriving while one is stored are stored together next: one counter update, one insert (`storeTogether`). */
  private readonly adds = new Coalescer<PendingAdd, { error?: unknown }>((batch) => this.storeTogether(batch));
  /**
   * `publishOrAdd`'s sends arriving while one is under way go together next, in one produce request. A round goes
   * out only if the outbox is still drained at its turn (a failed round before it stored its events: those go
   * first); a failed round's events are stored, and the relay sends them in order.
   */
  private readonly sends = new Coalescer<readonly EventRecord[], void>(async (batch) => {
    if (!this.mayPublishNow()) throw new Error('events wait in the outbox: these go behind them');
    try {
      await this.publisher.send(batch.flat());
    } catch (err) {
      this.drained = false;
      throw err;
    }
    return batch.map(() => undefined);
  });
  /** Releases that arrive while one is being written are written together next: one update. */
  private readonly releases = new Coalescer<readonly string[], void>(async (batch) => {
    await this.model.updateMany(
      { _id: { $in: batch.flat() } },
      { $set: { availableAt: new Date() }, $unset: { readBack: 1 } },
    );
    this.relay.changedHere();
    return batch.map(() => undefined);
  });

  constructor(
    conn: Connection,
    private readonly publisher: EventPublisher,
    private readonly log: Logger,
    opts: OutboxOptions,
  ) {
    this.model = modelOf(conn, 'Outbox', outboxSchema);
    declareQueries(this.model, outboxQueryShapes);
    this.parked = modelOf(conn, 'OutboxParked', parkedSchema);
    this.sequence = new OutboxSequence(conn);
    this.holdMs = opts.holdMs ?? 30_000;
    this.lease = opts.lease ?? new Lease(conn, 'outbox-relay', opts.instanceId, opts.leaseMs);
    // Taken (again): another replica may have stored events meanwhile; empty only once a pass says so.
    this.lease.onTaken(() => {
      this.drained = false;
    });
    // Lost: the next relay finds what was released here released in the store.
    this.lease.onLost(() => {
      this.drained = false;
      void this.handOver();
    });
    this.relay = new OutboxRelay(this.model, this.parked, publisher, this.lease, log, {
      service: opts.service ?? 'outbox',
      intervalMs: opts.intervalMs ?? RELAY_SAFETY_NET_MS,
      lookMs: opts.lookMs ?? RELAY_LOOK_MS,
      holdMs: this.holdMs,
      releasedHere: this.releasedHere,
      mark: () => (this.insertsUnderway === 0 ? this.inserts : -1),
      found: (n) => {
        if (n > 0) this.drained = false;
      },
      emptied: (mark) => {
        if (mark === this.inserts && this.insertsUnderway === 0) this.drained = true;
      },
      passed: (ok) => {
        this.relayWorks = ok;
        if (!ok) this.drained = false;
      },
      handOver: () => this.handOver(),
    });
  }

  /** Stores one event of the envelope's stream; returns its id. */
  async add<T>(envelope: MessageCodec<T>, key: string, message: T, opts: { eventId?: string } = {}): Promise<string> {
    const [id] = await this.addRecords([eventRecord(envelope, key, message, opts.eventId)]);
    return id!;
  }

  /**
   * Stores events, in order, for the relay to publish now; events announcing a write go through `announce`.
   * `freshKeys`: no event of any record's key is stored before this returns (a new contact's id), so their numbers
   * come from this process's reserved block, no counter update; the key's later events still number after them.
   */
  async addRecords(records: readonly EventRecord[], opts: { freshKeys?: boolean } = {}): Promise<string[]> {
    return this.store({ records, freshKeys: opts.freshKeys ?? false });
  }

  /**
   * Runs `write` and announces it with `events` (see `announceWith`). An event already stored under the same id
   * (a retried write whose first try died) is taken as this write's own.
   */
  async announce<R>(events: readonly EventRecord[], write: () => Promise<R>, opts: AnnounceOptions<R>): Promise<R> {
    const now = opts.atOnce && this.mayPublishNow() ? events.filter(opts.atOnce) : [];
    if (now.length === 0) return announceWith(this.held, events, write, opts);
    const sent = new Set(now);
    let result: R;
    try {
      result = await announceWith(
        this.held,
        events.filter((e) => !sent.has(e)),
        write,
        opts,
      );
    } catch (err) {
      // The write may have happened all the same: what the read-back finds written goes out.
      if (!refusedBeforeWriting(err)) await this.publishIfWritten(now, opts);
      throw err;
    }
    // A failure here fails the caller, whose retry announces the same event ids.
    if (opts.applied?.(result) ?? true) await this.publishOrAdd(now);
    return result;
  }

  /** `atOnce` events of a failed write: sent if it happened; held for the relay when the read-back fails. */
  private async publishIfWritten<R>(records: readonly EventRecord[], opts: AnnounceOptions<R>): Promise<void> {
    const readBacks = records.map((r) => (typeof opts.readBack === 'function' ? opts.readBack(r) : opts.readBack));
    try {
      const written = await Promise.all(readBacks.map((rb) => this.happened(rb)));
      await this.publishOrAdd(records.filter((_, i) => written[i]));
    } catch (err) {
      await this.hold(records, readBacks, false).catch((e: unknown) =>
        this.log.warn({ err: e, cause: err, events: records.length }, "a failed write's events could not be kept"),
      );
    }
  }

  private readonly held: HeldEvents = {
    hold: (events, readBacks, freshKeys) => this.hold(events, readBacks, freshKeys),
    release: (ids) => this.release(ids),
    discard: (ids) => this.discard(ids),
    happened: (rb) => this.happened(rb),
    warn: (fields, message) => this.log.warn(fields, message),
  };

  private async store(add: PendingAdd): Promise<string[]> {
    const { records } = add;
    if (records.length === 0) return [];
    refuseTooLarge(records);
    const { error } = await this.adds.run(add);
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- the store's own failure, caught for the batch and passed on as it was
    if (error !== undefined) throw error;
    return records.map((r) => r.eventId);
  }

  /** Stores events that may be stored already under the same ids (a repeated announcement); those stay as they are. */
  async addOnce(records: readonly EventRecord[]): Promise<void> {
    await this.storeOnce({ records, freshKeys: false });
  }

  /**
   * For events their caller announces again until its own write says they went (decision 0144): sent at once while
   * this replica relays and nothing waits, else (or if Kafka is slow) stored as by `addOnce`; duplicates are skipped.
   */
  async publishOrAdd(records: readonly EventRecord[]): Promise<void> {
    if (records.length === 0) return;
    refuseTooLarge(records);
    if (this.mayPublishNow()) {
      try {
        await withTimeout(this.sends.run(records), PUBLISH_NOW_MS, 'publishing events at once');
        return;
      } catch (err) {
        // Stored until the relay has published what waits; a round still on its way may land too (same ids).
        this.drained = false;
        this.log.warn({ err, events: records.length }, 'events could not be published at once; stored in the outbox');
      }
    }
    await this.addOnce(records);
  }

  private mayPublishNow(): boolean {
    return this.drained && this.lease.held && !this.stopping;
  }

  /** Stores held events; one stored before (an earlier try) stays, its id answered: that try's write decides it. */
  private hold(
    records: readonly EventRecord[],
    readBacks: readonly ReadBack[],
    freshKeys: boolean,
  ): Promise<ReadonlySet<string>> {
    return this.storeOnce({ records, readBacks, freshKeys });
  }

  /** Stores the add (if some were stored before, the rest one by one); answers the ids stored before. */
  private async storeOnce(add: PendingAdd): Promise<Set<string>> {
    const before = new Set<string>();
    try {
      await this.store(add);
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      // A lone event: the one stored before is it.
      if (add.records.length === 1) return before.add(add.records[0]!.eventId);
      for (const [i, record] of add.records.entries()) {
        await this.store({
          records: [record],
          ...(add.readBacks && { readBacks: [add.readBacks[i]!] }),
          freshKeys: false,
        }).catch((e: unknown) => {
          if (!isDuplicateKeyError(e)) throw e;
          before.add(record.eventId);
        });
      }
    }
    return before;
  }

  private happened(rb: ReadBack): Promise<boolean> {
    return readBackHappened(this.model, rb);
  }

  /**
   * Stores the gathered adds in order with one counter update and one insert. A duplicate undoes the batch and
   * stores each add alone, so only the add naming a stored event fails.
   */
  private async storeTogether(batch: readonly PendingAdd[]): Promise<{ error?: unknown }[]> {
    const docs = batch.flatMap((a) => a.records.map((record, i) => ({ record, readBack: a.readBacks?.[i] })));
    const first = batch.every((a) => a.freshKeys)
      ? await this.sequence.reserveForFreshKeys(docs.length)
      : await this.sequence.reserve(docs.length);
    try {
      await this.insertInOrder(docs, first);
      return batch.map(() => ({}));
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      await this.model.deleteMany({
        _id: { $in: docs.map((d) => d.record.eventId) },
        seq: { $gte: first, $lt: first + docs.length },
      });
      const out: { error?: unknown }[] = [];
      for (const a of batch)
        out.push(
          await this.storeAlone(a).then(
            () => ({}),
            (error: unknown) => ({ error }),
          ),
        );
      return out;
    }
  }

  /** One add's events, retried with new numbers if another writer got the same ones. */
  private async storeAlone({ records, readBacks }: PendingAdd): Promise<void> {
    const ids = records.map((r) => r.eventId);
    for (let attempt = 1; ; attempt++) {
      const first = await this.sequence.reserve(records.length);
      try {
        await this.insertInOrder(
          records.map((record, i) => ({ record, readBack: readBacks?.[i] })),
          first,
        );
        return;
      } catch (err) {
        if (!isDuplicateKeyError(err) || attempt >= 3) throw err;
        // Undo this attempt's inserts; an id stored before is the caller's to handle, a shared number gets new ones.
        await this.model.deleteMany({ _id: { $in: ids }, seq: { $gte: first, $lt: first + records.length } });
        if (await this.model.exists({ _id: { $in: ids } })) throw err;
      }
    }
  }

  private async insertInOrder(
    docs: readonly { record: EventRecord; readBack: ReadBack | undefined }[],
    first: number,
  ): Promise<void> {
    const now = new Date();
    const heldUntil = new Date(now.getTime() + this.holdMs);
    // From here events wait in the outbox: later ones may not go out before them.
    this.drained = false;
    this.inserts++;
    this.insertsUnderway++;
    try {
      await insertAsBuilt(
        this.model,
        docs.map(({ record: r, readBack }, i) => ({
          _id: r.eventId,
          seq: first + i,
          topic: r.topic,
          key: r.key,
          type: r.type,
          payload: Buffer.from(r.payload),
          ...(r.traceHeaders && Object.keys(r.traceHeaders).length > 0 && { traceHeaders: r.traceHeaders }),
          createdAt: now,
          availableAt: readBack ? heldUntil : now,
          ...(readBack && { readBack: EJSON.stringify(readBack, { relaxed: false }) }),
        })),
        true,
      );
    } finally {
      this.insertsUnderway--;
    }
    // A held event waits for its release (which wakes the relay), or for the end of its hold.
    if (docs.some((d) => !d.readBack)) this.relay.changedHere();
  }

  /**
   * Makes held events available: in memory while this replica relays (decision 0143), else by a store write. If the
   * lease is lost first, they stay held in the store and the next relay reads back their write when the hold ends.
   */
  private async release(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    if (
      this.lease.held &&
      !this.stopping &&
      this.relayWorks &&
      this.releasedHere.size + ids.length <= MAX_RELEASED_HERE
    ) {
      for (const id of ids) this.releasedHere.add(id);
      this.relay.changedHere();
      return;
    }
    await this.releases.run(ids);
  }

  /** Drops held events whose write did not happen; one released already (by an earlier try) stays. */
  private async discard(ids: readonly string[]): Promise<void> {
    // One released here is still held in the store: released all the same.
    const held = ids.filter((id) => !this.releasedHere.has(id));
    if (held.length > 0) await this.model.deleteMany({ _id: { $in: held }, readBack: { $exists: true } });
  }

  /**
   * Writes in-memory releases to the store (lease lost, or stop) so the next relay publishes them rather than reading
   * their writes back when their hold ends. Never rejects.
   */
  private handOver(): Promise<void> {
    const ids = [...this.releasedHere];
    this.releasedHere.clear();
    if (ids.length === 0) return this.handingOver;
    this.handingOver = this.handingOver
      .then(() => this.releases.run(ids))
      .catch((err: unknown) =>
        this.log.warn(
          { err, events: ids.length },
          'events released here were left held; the next relay settles them when their hold ends',
        ),
      );
    return this.handingOver;
  }

  /** Relays waiting events now if this replica holds the lease; calls coalesce. Never rejects (failures are logged). */
  flush(): Promise<void> {
    return this.relay.runNow();
  }

  start(): void {
    this.relay.start();
    this.gauges = outboxGauges(this.model, this.parked);
  }

  /** Stops relaying: the pass under way finishes, in-memory releases are written, then the lease is given up. */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const g of this.gauges.splice(0)) g.stop();
    await this.relay.stop();
    await this.handOver();
  }

  /** Whether this replica is the one relaying now. */
  get relaying(): boolean {
    return this.lease.held;
  }
}

function refuseTooLarge(records: readonly EventRecord[]): void {
  const tooLarge = records.find((r) => r.payload.byteLength > MAX_EVENT_BYTES);
  if (tooLarge)
    throw new Error(
      `event ${tooLarge.type} is ${tooLarge.payload.byteLength} bytes; events carry ids and facts, at most ${MAX_EVENT_BYTES}`,
    );
}
