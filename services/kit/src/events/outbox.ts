// Over 300 lines because it keeps one job, an event's way into the outbox (adds, holds, releases, or at once past it); its documents, relay and gauges have files of their own.
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
   * How often the lease holder looks for events besides being woken (this replica's stored and
   * released events wake it at once, a held event at the end of its hold) while it holds the lease
   * alone: the safety net, and the retry after a failed publish (default 30 s).
   */
  intervalMs?: number;
  /**
   * How often it looks while another replica contends for the lease (`Lease.shared`): that
   * replica's events are found by the next look, so this bounds how long they wait (default
   * 250 ms; decision 0141).
   */
  lookMs?: number;
  /**
   * How long a held event waits for its writer to settle it; then the relay reads back whether
   * its write happened (and again this long later while that read fails). Longer than any write.
   */
  holdMs?: number;
  /**
   * The lease the relay runs under. A service with singleton jobs of its own passes their lease, so
   * its replicas renew one lease, not two (and the relay runs where those jobs run). Default: an
   * `outbox-relay` lease of its own, lasting `leaseMs` (the kit's `LEASE_TTL_MS`) without renewal.
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
/**
 * Events released in memory and not yet published, at most (a Kafka outage keeps them waiting);
 * past it, a release is written to the store as before.
 */
const MAX_RELEASED_HERE = 10_000;
/**
 * How long `publishOrAdd` waits for Kafka before it stores the events instead (Kafka slow or away;
 * a healthy broker acknowledges in milliseconds): what a call's step may wait on Kafka at worst.
 */
const PUBLISH_NOW_MS = 500;

/**
 * Transactional outbox without transactions (decision 0110: a transaction would add round trips
 * to every business write and order nothing). An event is stored in the
 * service's own database before (`hold`) or together with the state change it announces, and a
 * relay publishes it. Exactly one replica relays at a time (a lease), in store order, skipping
 * past a held event only for other keys, so every key's events reach Kafka in the order they
 * were stored; each is deleted once Kafka has it. A relay that dies between publishing and
 * deleting publishes those events again with the same ids, which consumers skip: delivery is at
 * least once, never lost.
 */
export class Outbox implements Announcer {
  readonly model: Model<OutboxDoc>;
  readonly parked: Model<ParkedDoc>;
  private readonly sequence: OutboxSequence;
  private readonly lease: Lease;
  private readonly relay: OutboxRelay;
  private readonly holdMs: number;
  private gauges: ObservedGauge[] = [];
  /**
   * Held events whose write happened, released by this replica while it relays: its relay
   * publishes them without a release written to the store (decision 0143: one document write
   * fewer an announced change). The relay forgets each once Kafka has it.
   */
  private readonly releasedHere = new Set<string>();
  private stopping = false;
  /** Inserts this process began, and those not yet answered: whether a pass that found the outbox empty could have missed one. */
  private inserts = 0;
  private insertsUnderway = 0;
  /**
   * This replica's relay found the outbox empty after its last pass, no insert of this process
   * under way then or begun since: `publishOrAdd` may send at once without overtaking an event
   * stored before. False again with any insert here, any event a pass finds, a failed send or pass.
   */
  private drained = false;
  /** The relay's last pass published what it read (false after one failed: Kafka away); releases stay in memory only then. */
  private relayWorks = true;
  /** The releases kept in memory being written to the store (the lease lost, or given up at stop). */
  private handingOver: Promise<void> = Promise.resolve();
  /**
   * Adds of this process that arrive while one is being stored are stored together next: one
   * counter update and one ordered insert for all of them (see `storeTogether`).
   */
  private readonly adds = new Coalescer<PendingAdd, { error?: unknown }>((batch) => this.storeTogether(batch));
  /**
   * `publishOrAdd`'s sends that arrive while one is under way go to Kafka together next: one
   * produce request for many calls' events, as the relay's pass sends what it gathered. A round
   * goes out only while the outbox is still drained when its turn comes (a round before it may
   * have failed and stored its events: those go first); a round that fails (too large for one
   * request, Kafka away) has its events stored, and the relay sends them in order, in chunks.
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
   * Stores events durably, in order, for the relay to publish now: events that need no write of
   * their own, or that follow one already done. Events announcing a write go through `announce`.
   *
   * `freshKeys: true` says every record's key is new: no event of it was stored before, by any
   * replica, and none can be until this call returns (the key names what this call creates, such
   * as a new contact's id). Their places in the order then come from a block of numbers this
   * process took from the counter earlier, without a counter update: any later event of the key
   * gets a number the counter hands out after that block, so the key's events keep their order.
   */
  async addRecords(records: readonly EventRecord[], opts: { freshKeys?: boolean } = {}): Promise<string[]> {
    return this.store({ records, freshKeys: opts.freshKeys ?? false });
  }

  /**
   * Runs `write` and announces it with `events`: none goes out without its change, and no change
   * stays without its event (see `announceWith`). An event already stored under the same id (a
   * retried write whose first try died; its id comes from what it announces) is taken as this
   * write's own.
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
    // A failure here fails the caller, whose try again announces the same events (their ids follow from the write).
    if (opts.applied?.(result) ?? true) await this.publishOrAdd(now);
    return result;
  }

  /** `atOnce` events of a write that failed: sent if it happened; held for the relay to settle when the read-back fails. */
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

  /** The held events' side of `announce`. */
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

  /**
   * Stores events that may have been stored before under the same ids (an announcement repeated
   * by a retry or by recovery: its ids come from what it announces); those are left as they are.
   */
  async addOnce(records: readonly EventRecord[]): Promise<void> {
    await this.storeOnce({ records, freshKeys: false });
  }

  /**
   * Events whose caller announces them again until a write of its own says they went (a call's
   * end, announced before its row ends; decision 0144): sent to Kafka at once while this replica
   * relays and its outbox is empty, so no event stored before is overtaken; else, or when Kafka
   * has not taken them within 2 s, stored as `addOnce` stores them. A send that was slow but
   * landed is then relayed again under the same ids, which consumers skip.
   */
  async publishOrAdd(records: readonly EventRecord[]): Promise<void> {
    if (records.length === 0) return;
    refuseTooLarge(records);
    if (this.mayPublishNow()) {
      try {
        await withTimeout(this.sends.run(records), PUBLISH_NOW_MS, 'publishing events at once');
        return;
      } catch (err) {
        // Stored from here on until the relay has published what waits (a round still on its way
        // may land too: the same ids, which consumers skip).
        this.drained = false;
        this.log.warn({ err, events: records.length }, 'events could not be published at once; stored in the outbox');
      }
    }
    await this.addOnce(records);
  }

  private mayPublishNow(): boolean {
    return this.drained && this.lease.held && !this.stopping;
  }

  /**
   * Stores the events held; one stored before under its id (an earlier try of the same write) is
   * kept as it is, and its id answered: that try's write, not this one's, decides whether it goes.
   */
  private hold(
    records: readonly EventRecord[],
    readBacks: readonly ReadBack[],
    freshKeys: boolean,
  ): Promise<ReadonlySet<string>> {
    return this.storeOnce({ records, readBacks, freshKeys });
  }

  /** Stores the add; if some of its events were stored before, the rest one by one. The ids stored before. */
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

  /** Whether the write a read-back describes happened, by reading the store. */
  private happened(rb: ReadBack): Promise<boolean> {
    return readBackHappened(this.model, rb);
  }

  /**
   * Stores the adds gathered while the last store was under way, in arrival order, with one
   * counter update and one insert. A duplicate among them (an event stored before, or a number
   * another writer also got) undoes this batch's inserts and stores each add on its own, so only
   * the add that names a stored event fails.
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
        // Undo what this attempt inserted (its ids at its sequence numbers), then tell apart an
        // event id stored before (the caller's to handle) from a sequence number another writer
        // also got (take new ones).
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
   * Makes held events available to the relay (their write happened): in memory when this replica
   * relays (its relay publishes them next), else by a write the relaying replica finds. Should this
   * replica lose the lease before its relay published them, they stay held in the store and the
   * next relay settles them by reading back their write when their hold ends, as for a writer that died.
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

  /** Drops held events whose write did not happen. An event released already (by an earlier try of the same write) stays. */
  private async discard(ids: readonly string[]): Promise<void> {
    // One released here is still held in the store: released all the same.
    const held = ids.filter((id) => !this.releasedHere.has(id));
    if (held.length > 0) await this.model.deleteMany({ _id: { $in: held }, readBack: { $exists: true } });
  }

  /**
   * Writes the releases kept in memory to the store and forgets them (the lease lost, or about to
   * be given up at stop), so the next relay publishes them rather than settling them by reading
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

  /** Relays waiting events now if this replica holds the lease; concurrent calls coalesce. Never rejects (a failed pass is logged and tried again). */
  flush(): Promise<void> {
    return this.relay.runNow();
  }

  start(): void {
    this.relay.start();
    this.gauges = outboxGauges(this.model, this.parked);
  }

  /**
   * Stops relaying; the pass under way finishes first, what was released here and not yet
   * published is released in the store, then the lease is given up for the next replica.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    for (const g of this.gauges.splice(0)) g.stop();
    // The relay's last pass, then what it left released here is written (`handOver`), then the lease goes.
    await this.relay.stop();
    await this.handOver();
  }

  /** Whether this replica is the one relaying now. */
  get relaying(): boolean {
    return this.lease.held;
  }
}

/** An event larger than `MAX_EVENT_BYTES` is refused when it is added, not discovered when it cannot be sent. */
function refuseTooLarge(records: readonly EventRecord[]): void {
  const tooLarge = records.find((r) => r.payload.byteLength > MAX_EVENT_BYTES);
  if (tooLarge)
    throw new Error(
      `event ${tooLarge.type} is ${tooLarge.payload.byteLength} bytes; events carry ids and facts, at most ${MAX_EVENT_BYTES}`,
    );
}
