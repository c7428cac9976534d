import type { Connection, Model } from 'mongoose';
import { mongo, Schema } from 'mongoose';
import { Coalescer } from '../coalesce';
import type { Logger } from '../logger';
import { insertAsBuilt, isDuplicateKeyError } from '../mongo/connect';
import { Lease } from '../mongo/lease';
import { declareQueries } from '../mongo/query-check';
import type { QueryShape } from '../mongo/query-shapes';
import { announceWith, type AnnounceOptions, type Announcer, type HeldEvents, type ReadBack } from './announce';
import type { EventRecord } from './kafka';
import { eventRecord, hasKafkaErrorType, type EventPublisher } from './publisher';
import type { MessageCodec } from './stream';
import { cachedRead, serviceMetrics, type ObservedGauge } from '../telemetry/metrics';
import { Worker } from '../worker';

interface OutboxDoc {
  /** The event id. */
  _id: string;
  /** Store order: the relay publishes in this order, so one key's events keep theirs. */
  seq: number;
  topic: string;
  key: string;
  type: string;
  payload: Buffer;
  traceHeaders?: Record<string, string>;
  createdAt: Date;
  /** The relay publishes an event only from this moment on (held events: see `announce`). */
  availableAt: Date;
  /**
   * Set while the event is held: how to read back whether its write happened (a `ReadBack` as
   * extended JSON, so any filter keys can be stored). Gone once the event is released.
   */
  readBack?: string;
}

const outboxFields = {
  _id: { type: String },
  seq: { type: Number, required: true },
  topic: { type: String, required: true },
  key: { type: String, required: true },
  type: { type: String, required: true },
  payload: { type: Buffer, required: true },
  traceHeaders: { type: Schema.Types.Mixed },
  createdAt: { type: Date, required: true },
  availableAt: { type: Date, required: true },
  readBack: { type: String },
  /** The replica that stored or released it: its own change stream leaves its own writes out (it wakes its relay itself). */
  writer: { type: String },
};

export const outboxSchema = new Schema<OutboxDoc>(outboxFields, { versionKey: false, collection: 'outbox' });
// Serves the relay's scan: every waiting event, oldest first. Published events are deleted at
// once, so the collection holds only what is still to be sent and the scan stays small.
// Unique: two writers can never share a place in the order (the add retries with a fresh number).
outboxSchema.index({ seq: 1 }, { unique: true });
export const outboxQueryShapes: QueryShape[] = [{ name: 'relay', equality: [], sort: { seq: 1 } }];

interface SequenceDoc {
  _id: string;
  value: number;
}
const sequenceSchema = new Schema<SequenceDoc>({ _id: String, value: { type: Number, required: true } }, { versionKey: false, collection: 'outbox_sequence' });

export interface OutboxOptions {
  /** Names this replica as a relay lease holder (unique per replica). */
  instanceId: string;
  /**
   * How often the lease holder looks for events besides being woken: stored and released events
   * wake it through a change stream on the outbox, a held event at the end of its hold, so this is
   * only the safety net (default 30 s).
   */
  intervalMs?: number;
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

/** How many numbers this process takes from the counter at once for events of new keys. */
const FRESH_BLOCK = 1_000;

const { EJSON } = mongo.BSON;

const BATCH = 200;
/** One send stays well below Kafka's default 1 MB per partition batch (`message.max.bytes`). */
const BATCH_BYTES = 256 * 1024;
/** An event larger than this is refused when it is added, not discovered when it cannot be sent. */
export const MAX_EVENT_BYTES = 256 * 1024;

/**
 * The outbox's gauges read the store at most this often (every replica reports its service's
 * outbox: the figures are the store's, not the replica's).
 */
const FIGURES_TTL_MS = 10_000;
/** What the outbox's gauges report (`voiceapi.outbox.*`). */
interface OutboxFigures {
  /** Events stored and not yet published (held ones too). */
  backlog: number;
  /** When the oldest of them was stored; undefined when none waits. */
  oldestAt?: Date;
  /** Events Kafka refused, in `outbox_parked`. */
  parked: number;
}

/** Events Kafka refused for good (kept, with the error, for an operator to look at and replay). */
interface ParkedDoc extends OutboxDoc {
  error: string;
  parkedAt: Date;
}
const parkedSchema = new Schema<ParkedDoc>({ ...outboxFields, error: { type: String, required: true }, parkedAt: { type: Date, required: true } }, { versionKey: false, collection: 'outbox_parked' });
// No secondary index: read by operators, rarely and whole.

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
  private readonly sequence: Model<SequenceDoc>;
  private readonly lease: Lease;
  private readonly relay: Worker;
  private readonly holdMs: number;
  readonly parked: Model<ParkedDoc>;
  private stopped = false;
  private gauges: ObservedGauge[] = [];
  /** Numbers taken from the counter for events of new keys and not used yet: [next, end). */
  private block = { next: 0, end: 0 };
  /**
   * Adds of this process that arrive while one is being stored are stored together next: one
   * counter update and one ordered insert for all of them (see `storeTogether`).
   */
  private readonly adds = new Coalescer<PendingAdd, { error?: unknown }>((batch) => this.storeTogether(batch));
  /** Releases that arrive while one is being written are written together next: one update. */
  private readonly releases = new Coalescer<readonly string[], void>(async (batch) => {
    await this.model.updateMany({ _id: { $in: batch.flat() } }, { $set: { availableAt: new Date(), writer: this.instanceId }, $unset: { readBack: 1 } });
    this.relay.changedHere();
    return batch.map(() => undefined);
  });
  private readonly instanceId: string;

  constructor(
    conn: Connection,
    private readonly publisher: EventPublisher,
    private readonly log: Logger,
    opts: OutboxOptions,
  ) {
    this.model = conn.models.Outbox ?? conn.model<OutboxDoc>('Outbox', outboxSchema);
    declareQueries(this.model, outboxQueryShapes);
    this.sequence = conn.models.OutboxSequence ?? conn.model<SequenceDoc>('OutboxSequence', sequenceSchema);
    this.parked = conn.models.OutboxParked ?? conn.model<ParkedDoc>('OutboxParked', parkedSchema);
    this.holdMs = opts.holdMs ?? 30_000;
    this.instanceId = opts.instanceId;
    this.lease = opts.lease ?? new Lease(conn, 'outbox-relay', opts.instanceId, opts.leaseMs);
    this.relay = new Worker({
      service: opts.service ?? 'outbox',
      job: 'outbox-relay',
      everyMs: opts.intervalMs ?? 30_000,
      // Other replicas' writes wake it through the stream; this one's wake it in-process (`changedHere`).
      wakeOn: [{ model: this.model, operations: ['insert', 'update'], ownWrites: { field: 'writer', writer: opts.instanceId } }],
      gatherMs: 100,
      lease: this.lease,
      log,
      pass: () => this.relayOnce(),
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
  announce<R>(events: readonly EventRecord[], write: () => Promise<R>, opts: AnnounceOptions<R>): Promise<R> {
    return announceWith(this.held, events, write, opts);
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
    const tooLarge = records.find((r) => r.payload.byteLength > MAX_EVENT_BYTES);
    if (tooLarge) throw new Error(`event ${tooLarge.type} is ${tooLarge.payload.byteLength} bytes; events carry ids and facts, at most ${MAX_EVENT_BYTES}`);
    const { error } = await this.adds.run(add);
    // eslint-disable-next-line @typescript-eslint/only-throw-error -- the store's own failure, caught for the batch and passed on as it was
    if (error !== undefined) throw error;
    return records.map((r) => r.eventId);
  }

  /** Stores the events held; one stored before under its id (an earlier try of the same write) is kept as it is. */
  private async hold(records: readonly EventRecord[], readBacks: readonly ReadBack[], freshKeys: boolean): Promise<void> {
    try {
      await this.store({ records, readBacks, freshKeys });
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      for (const [i, record] of records.entries()) {
        await this.store({ records: [record], readBacks: [readBacks[i]!], freshKeys: false }).catch((e: unknown) => {
          if (!isDuplicateKeyError(e)) throw e;
        });
      }
    }
  }

  /** Whether the write a read-back describes happened, by reading the store. */
  private async happened(rb: ReadBack): Promise<boolean> {
    if (rb.applied === 'always') return true;
    const found = await this.model.db.collection(rb.collection).findOne(rb.filter, { projection: { _id: 1 } });
    return rb.applied === 'present' ? found !== null : found === null;
  }

  /**
   * Stores the adds gathered while the last store was under way, in arrival order, with one
   * counter update and one insert. A duplicate among them (an event stored before, or a number
   * another writer also got) undoes this batch's inserts and stores each add on its own, so only
   * the add that names a stored event fails.
   */
  private async storeTogether(batch: readonly PendingAdd[]): Promise<{ error?: unknown }[]> {
    const docs = batch.flatMap((a) => a.records.map((record, i) => ({ record, readBack: a.readBacks?.[i] })));
    const first = batch.every((a) => a.freshKeys) ? await this.reserveForFreshKeys(docs.length) : await this.reserve(docs.length);
    try {
      await this.insertInOrder(docs, first);
      return batch.map(() => ({}));
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      await this.model.deleteMany({ _id: { $in: docs.map((d) => d.record.eventId) }, seq: { $gte: first, $lt: first + docs.length } });
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
      const first = await this.reserve(records.length);
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

  private async insertInOrder(docs: readonly { record: EventRecord; readBack: ReadBack | undefined }[], first: number): Promise<void> {
    const now = new Date();
    const heldUntil = new Date(now.getTime() + this.holdMs);
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
        writer: this.instanceId,
      })),
      true,
    );
    // A held event waits for its release (which wakes the relay), or for the end of its hold.
    if (docs.some((d) => !d.readBack)) this.relay.changedHere();
  }

  /** Makes held events available to the relay (their write happened). */
  private async release(ids: readonly string[]): Promise<void> {
    if (ids.length > 0) await this.releases.run(ids);
  }

  /** Drops held events whose write did not happen. An event released already (by an earlier try of the same write) stays. */
  private async discard(ids: readonly string[]): Promise<void> {
    if (ids.length > 0) await this.model.deleteMany({ _id: { $in: ids }, readBack: { $exists: true } });
  }

  /** Relays waiting events now if this replica holds the lease; concurrent calls coalesce. Never rejects (a failed pass is logged and tried again). */
  flush(): Promise<void> {
    return this.relay.runNow();
  }

  start(): void {
    this.relay.start();
    this.observe();
  }

  /** Stops relaying; the pass under way finishes first, then the lease is given up for the next replica. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const g of this.gauges.splice(0)) g.stop();
    await this.relay.stop();
  }

  /**
   * The outbox's gauges, read from the store when metrics are exported (never while telemetry is
   * off), at most every `FIGURES_TTL_MS`. Every replica reports the same figures of its service's
   * outbox (whichever replica relays): take the highest (`max by (job)`), not the sum.
   */
  private observe(): void {
    const figures = cachedRead(FIGURES_TTL_MS, () => this.figures());
    const m = serviceMetrics('outbox');
    this.gauges = [
      m.gauge('backlog', { description: 'Events stored in the outbox and not yet published to Kafka (held ones too)', unit: '{event}' }, async () => [{ value: (await figures()).backlog, attributes: {} }]),
      m.gauge('oldest_age', { description: 'Age of the oldest event in the outbox not yet published (0 when none waits)', unit: 's' }, async () => {
        const { oldestAt } = await figures();
        return [{ value: oldestAt ? Math.max(0, Date.now() - oldestAt.getTime()) / 1000 : 0, attributes: {} }];
      }),
      m.gauge('parked', { description: 'Events Kafka refused for good, kept in outbox_parked for an operator', unit: '{event}' }, async () => [{ value: (await figures()).parked, attributes: {} }]),
    ];
  }

  /**
   * Three small reads: the waiting and the parked events counted from the collections' metadata,
   * and the first waiting event in sequence order (the relay's order and index; events of new keys
   * take numbers from a block reserved earlier, so the true oldest may sit a block's hold time
   * behind it).
   */
  private async figures(): Promise<OutboxFigures> {
    const [backlog, first, parked] = await Promise.all([
      this.model.estimatedDocumentCount(),
      this.model.findOne({}, { _id: 0, createdAt: 1 }).sort({ seq: 1 }).lean<Pick<OutboxDoc, 'createdAt'>>(),
      this.parked.estimatedDocumentCount(),
    ]);
    return { backlog, parked, ...(first && { oldestAt: first.createdAt }) };
  }

  /** Whether this replica is the one relaying now. */
  get relaying(): boolean {
    return this.lease.held;
  }

  private async relayOnce(): Promise<void> {
    for (;;) {
      const now = Date.now();
      const batch = await this.model.find({}).sort({ seq: 1 }).limit(BATCH).lean<OutboxDoc[]>();
      // A held event blocks the later events of its key (not of other keys) until it is released.
      const blocked = new Set<string>();
      const ready: OutboxDoc[] = [];
      let heldUntil = Infinity;
      for (const d of batch) {
        const lane = `${d.topic}\u0000${d.key}`;
        let availableAt = d.availableAt.getTime();
        // Its hold ended and its writer never settled it (it died, or could not read back): the
        // relay reads back whether the write happened. An event behind a held one waits its turn.
        if (availableAt <= now && d.readBack !== undefined && !blocked.has(lane)) {
          const verdict = await this.settleLate(d);
          if (verdict === 'discarded') continue;
          if (verdict === 'unknown') availableAt = now + this.holdMs;
        }
        if (availableAt > now) heldUntil = Math.min(heldUntil, availableAt);
        if (blocked.has(lane) || availableAt > now) blocked.add(lane);
        else ready.push(d);
      }
      // A held event is settled when its hold ends.
      if (heldUntil !== Infinity) this.relay.wakeIn(heldUntil - now);
      if (ready.length === 0) return;
      for (const chunk of byBytes(ready)) {
        // A relay whose lease ran out while it waited must not publish behind its successor.
        if (!this.lease.held || this.stopped) return;
        await this.publish(chunk);
      }
      if (batch.length < BATCH) return;
    }
  }

  /**
   * Settles a held event whose hold ended by reading back whether its write happened: released
   * (and published by this pass) or discarded. While the read fails it stays held, and blocks its
   * key's later events, for another hold: an event must not go out before its change is known.
   */
  private async settleLate(d: OutboxDoc): Promise<'released' | 'discarded' | 'unknown'> {
    const held = { _id: d._id, readBack: { $exists: true } };
    let applied: boolean;
    try {
      applied = await this.happened(EJSON.parse(d.readBack!, { relaxed: false }) as ReadBack);
    } catch (err) {
      this.log.warn({ err, eventId: d._id, type: d.type }, 'a held event could not be settled; it stays held and is read back again later');
      await this.model.updateOne(held, { $set: { availableAt: new Date(Date.now() + this.holdMs) } });
      return 'unknown';
    }
    this.log.warn({ eventId: d._id, type: d.type, applied }, 'a held event was settled by the relay (its writer did not settle it)');
    if (!applied) {
      await this.model.deleteOne(held);
      return 'discarded';
    }
    await this.model.updateOne(held, { $set: { availableAt: new Date() }, $unset: { readBack: 1 } });
    return 'released';
  }

  /**
   * Sends and deletes a chunk. A failure that is not the broker refusing a record (Kafka away, a
   * leader moving, a timeout: the producer's retries ran out) leaves the chunk for the next pass,
   * in order. A record Kafka refuses for good (too large, invalid, not allowed) is found by trying
   * the events one by one and parked with its error, so it does not hold up every event behind it.
   */
  private async publish(chunk: OutboxDoc[]): Promise<void> {
    try {
      await this.publisher.send(chunk.map(toRecord));
    } catch (err) {
      if (!refusesRecord(err)) throw err;
      if (chunk.length > 1) {
        for (const d of chunk) await this.publish([d]);
        return;
      }
      const d = chunk[0]!;
      this.log.error({ err, eventId: d._id, topic: d.topic, type: d.type }, 'Kafka refused an outbox event; parked in outbox_parked');
      await this.parked.create({ ...d, error: err instanceof Error ? err.message : String(err), parkedAt: new Date() });
    }
    await this.model.deleteMany({ _id: { $in: chunk.map((d) => d._id) } });
  }

  /** `count` consecutive numbers for events of new keys, from this process's block (a new block when it runs short). */
  private async reserveForFreshKeys(count: number): Promise<number> {
    if (this.block.end - this.block.next < count) {
      const size = Math.max(count, FRESH_BLOCK);
      const first = await this.reserve(size);
      this.block = { next: first, end: first + size };
    }
    const first = this.block.next;
    this.block.next += count;
    return first;
  }

  /**
   * Takes `count` consecutive numbers from the store's counter; returns the first. The counter is
   * one shared document, so a process's concurrent adds take theirs together (see `adds`);
   * numbers still come from it in time order, so one key's events keep their order across
   * replicas, and the unique index gives each event its place.
   */
  private async reserve(count: number): Promise<number> {
    for (let tries = 1; ; tries++) {
      const doc = await this.sequence.findOneAndUpdate({ _id: 'outbox' }, { $inc: { value: count } }, { upsert: true, new: true }).lean<SequenceDoc>();
      if (doc) return doc.value - count + 1;
      // An answer without the document (the local store gives one to concurrent upserts, the
      // increment applied): which numbers were taken is unknown, so new ones are taken and those
      // stay unused, as a failed batch's do. Never a reason to fail the events' writer.
      if (tries >= 3) throw new Error('the store answered the outbox counter without its value three times');
    }
  }
}

/** Broker answers that refuse a record whatever the retries: parked, not retried. */
const RECORD_REFUSALS = new Set(['MESSAGE_TOO_LARGE', 'RECORD_LIST_TOO_LARGE', 'INVALID_RECORD', 'CORRUPT_MESSAGE', 'INVALID_TOPIC_EXCEPTION', 'TOPIC_AUTHORIZATION_FAILED', 'POLICY_VIOLATION']);

const refusesRecord = (err: unknown): boolean => hasKafkaErrorType(err, RECORD_REFUSALS);

/** Consecutive chunks of at most `BATCH_BYTES` (a lone larger event is a chunk of its own). */
function byBytes(docs: OutboxDoc[]): OutboxDoc[][] {
  const chunks: OutboxDoc[][] = [];
  let current: OutboxDoc[] = [];
  let bytes = 0;
  for (const d of docs) {
    const size = asBytes(d.payload).byteLength + d.key.length + 200;
    if (current.length > 0 && bytes + size > BATCH_BYTES) {
      chunks.push(current);
      current = [];
      bytes = 0;
    }
    current.push(d);
    bytes += size;
  }
  if (current.length > 0) chunks.push(current);
  return chunks;
}

function toRecord(d: OutboxDoc): EventRecord {
  return { eventId: d._id, topic: d.topic, key: d.key, type: d.type, payload: asBytes(d.payload), ...(d.traceHeaders && { traceHeaders: d.traceHeaders }) };
}

/** Lean reads return BSON Binary for Buffer fields. */
function asBytes(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value;
  const binary = value as { buffer?: Uint8Array };
  if (binary.buffer instanceof Uint8Array) return binary.buffer;
  throw new Error('outbox payload is not binary');
}
