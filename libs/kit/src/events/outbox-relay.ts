import type { Model } from 'mongoose';
import { mongo } from 'mongoose';
import type { Logger } from '../logger';
import type { Lease } from '../mongo/lease';
import { Worker } from '../worker';
import type { ReadBack } from './announce';
import type { EventRecord } from './kafka';
import type { OutboxDoc, ParkedDoc } from './outbox-store';
import { hasKafkaErrorType, type EventPublisher } from './publisher';

const { EJSON } = mongo.BSON;

const BATCH = 200;
/** One send stays well below Kafka's default 1 MB per partition batch (`message.max.bytes`). */
const BATCH_BYTES = 256 * 1024;

/** Publishes the outbox in store order while this replica holds the lease, and removes each event Kafka has. */
export class OutboxRelay {
  private readonly worker: Worker;
  private stopped = false;

  constructor(
    private readonly model: Model<OutboxDoc>,
    private readonly parked: Model<ParkedDoc>,
    private readonly publisher: EventPublisher,
    private readonly lease: Lease,
    private readonly log: Logger,
    private readonly o: {
      service: string;
      intervalMs: number;
      lookMs: number;
      holdMs: number;
      /** Held events released in memory here (`Outbox.release`): available; forgotten once published. */
      releasedHere: Set<string>;
      /** Read before a pass reads the outbox; handed back to `emptied`. */
      mark: () => number;
      /** How many events a read of the pass found. */
      found: (n: number) => void;
      /** A pass read all there was and published it; `mark` as read before it. */
      emptied: (mark: number) => void;
      /** A pass ended: whether it published what it read. */
      passed: (ok: boolean) => void;
      /** At stop, after the last pass and before the lease is let go. */
      handOver: () => Promise<void>;
    },
  ) {
    this.worker = new Worker({
      service: o.service,
      job: 'outbox-relay',
      // Local writes wake it (`changedHere`); another replica's are found by the next look: no change stream
      // (decision 0141: an open stream taxes every write, a look at an empty outbox is one indexed read).
      everyMs: o.intervalMs,
      lookMs: o.lookMs,
      gatherMs: 100,
      lease,
      log,
      pass: () => this.relayOnce(),
      drain: () => o.handOver(),
    });
  }

  /** This process stored or released events: the relay looks now. */
  changedHere(): void {
    this.worker.changedHere();
  }

  /** Relays now if this replica holds the lease; calls coalesce. Never rejects. */
  runNow(): Promise<void> {
    return this.worker.runNow();
  }

  start(): void {
    this.worker.start();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.worker.stop();
  }

  private async relayOnce(): Promise<void> {
    try {
      await this.relayAll();
    } catch (err) {
      this.o.passed(false);
      throw err;
    }
    this.o.passed(true);
  }

  private async relayAll(): Promise<void> {
    for (;;) {
      const now = Date.now();
      const mark = this.o.mark();
      const batch = await this.model.find({}).sort({ seq: 1 }).limit(BATCH).lean<OutboxDoc[]>();
      this.o.found(batch.length);
      // A held event blocks the later events of its key (not of other keys) until it is released.
      const blocked = new Set<string>();
      const ready: OutboxDoc[] = [];
      let heldUntil = Infinity;
      for (const d of batch) {
        const lane = `${d.topic}\u0000${d.key}`;
        const releasedHere = this.o.releasedHere.has(d._id);
        let availableAt = releasedHere ? now : d.availableAt.getTime();
        // Hold ended with no settling by its writer: read back. An event behind a held one waits its turn.
        if (availableAt <= now && d.readBack !== undefined && !releasedHere && !blocked.has(lane)) {
          const verdict = await this.settleLate(d);
          if (verdict === 'discarded') continue;
          if (verdict === 'unknown') availableAt = now + this.o.holdMs;
        }
        if (availableAt > now) heldUntil = Math.min(heldUntil, availableAt);
        if (blocked.has(lane) || availableAt > now) blocked.add(lane);
        else ready.push(d);
      }
      if (heldUntil !== Infinity) this.worker.wakeIn(heldUntil - now);
      if (ready.length === 0) {
        if (batch.length === 0) this.o.emptied(mark);
        return;
      }
      for (const chunk of byBytes(ready)) {
        // A relay whose lease ran out while it waited must not publish behind its successor.
        if (!this.lease.held || this.stopped) return;
        await this.publish(chunk);
      }
      if (batch.length < BATCH) {
        if (ready.length === batch.length) this.o.emptied(mark);
        return;
      }
    }
  }

  /**
   * Settles a held event whose hold ended by reading back its write. While the read fails it stays held, blocking
   * its key: an event must not go out before its change is known.
   */
  private async settleLate(d: OutboxDoc): Promise<'released' | 'discarded' | 'unknown'> {
    const held = { _id: d._id, readBack: { $exists: true } };
    let applied: boolean;
    try {
      applied = await readBackHappened(this.model, EJSON.parse(d.readBack!, { relaxed: false }) as ReadBack);
    } catch (err) {
      this.log.warn(
        { err, eventId: d._id, type: d.type },
        'a held event could not be settled; it stays held and is read back again later',
      );
      await this.model.updateOne(held, { $set: { availableAt: new Date(Date.now() + this.o.holdMs) } });
      return 'unknown';
    }
    this.log.warn(
      { eventId: d._id, type: d.type, applied },
      'a held event was settled by the relay (its writer did not settle it)',
    );
    if (!applied) {
      await this.model.deleteOne(held);
      return 'discarded';
    }
    await this.model.updateOne(held, { $set: { availableAt: new Date() }, $unset: { readBack: 1 } });
    return 'released';
  }

  /**
   * Sends and deletes a chunk; a transient failure leaves it for the next pass. A record Kafka refuses for good is
   * found by sending one by one and parked, so it does not hold up the events behind it.
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
      this.log.error(
        { err, eventId: d._id, topic: d.topic, type: d.type },
        'Kafka refused an outbox event; parked in outbox_parked',
      );
      await this.parked.create({ ...d, error: err instanceof Error ? err.message : String(err), parkedAt: new Date() });
    }
    await this.model.deleteMany({ _id: { $in: chunk.map((d) => d._id) } });
    for (const d of chunk) this.o.releasedHere.delete(d._id);
  }
}

/** Whether the write a read-back describes happened, by reading the store. */
export async function readBackHappened(model: Model<OutboxDoc>, rb: ReadBack): Promise<boolean> {
  if (rb.applied === 'always') return true;
  const found = await model.db.collection(rb.collection).findOne(rb.filter, { projection: { _id: 1 } });
  return rb.applied === 'present' ? found !== null : found === null;
}

/** Broker answers that refuse a record whatever the retries: parked, not retried. */
const RECORD_REFUSALS = new Set([
  'MESSAGE_TOO_LARGE',
  'RECORD_LIST_TOO_LARGE',
  'INVALID_RECORD',
  'CORRUPT_MESSAGE',
  'INVALID_TOPIC_EXCEPTION',
  'TOPIC_AUTHORIZATION_FAILED',
  'POLICY_VIOLATION',
]);

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
  return {
    eventId: d._id,
    topic: d.topic,
    key: d.key,
    type: d.type,
    payload: asBytes(d.payload),
    ...(d.traceHeaders && { traceHeaders: d.traceHeaders }),
  };
}

/** Lean reads return BSON Binary for Buffer fields. */
function asBytes(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value;
  const binary = value as { buffer?: Uint8Array };
  if (binary.buffer instanceof Uint8Array) return binary.buffer;
  throw new Error('outbox payload is not binary');
}
