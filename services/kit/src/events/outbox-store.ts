import { Schema, type Connection, type Model } from 'mongoose';
import { modelOf } from '../mongo/connect';
import type { QueryShape } from '../mongo/query-shapes';

/*
 * The outbox's documents: the events waiting to be published (`outbox`), the counter that gives
 * each its place in the order (`outbox_sequence`), and the events Kafka refused (`outbox_parked`).
 * The outbox (outbox.ts) writes them; its relay (outbox-relay.ts) publishes and removes them.
 */

export interface OutboxDoc {
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
const sequenceSchema = new Schema<SequenceDoc>(
  { _id: String, value: { type: Number, required: true } },
  { versionKey: false, collection: 'outbox_sequence' },
);

/** Events Kafka refused for good (kept, with the error, for an operator to look at and replay). */
export interface ParkedDoc extends OutboxDoc {
  error: string;
  parkedAt: Date;
}
export const parkedSchema = new Schema<ParkedDoc>(
  { ...outboxFields, error: { type: String, required: true }, parkedAt: { type: Date, required: true } },
  { versionKey: false, collection: 'outbox_parked' },
);
// No secondary index: read by operators, rarely and whole.

/** How many numbers this process takes from the counter at once for events of new keys. */
const FRESH_BLOCK = 1_000;

/**
 * Places in the publishing order: consecutive numbers from the store's counter, or for events of
 * new keys from a block this process took from it earlier (see `Outbox.addRecords`).
 */
export class OutboxSequence {
  private readonly sequence: Model<SequenceDoc>;
  /** Numbers taken from the counter for events of new keys and not used yet: [next, end). */
  private block = { next: 0, end: 0 };

  constructor(conn: Connection) {
    this.sequence = modelOf(conn, 'OutboxSequence', sequenceSchema);
  }

  /** `count` consecutive numbers for events of new keys, from this process's block (a new block when it runs short). */
  async reserveForFreshKeys(count: number): Promise<number> {
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
   * one shared document, so a process's concurrent adds take theirs together (see `Outbox.adds`);
   * numbers still come from it in time order, so one key's events keep their order across
   * replicas, and the unique index gives each event its place.
   */
  async reserve(count: number): Promise<number> {
    for (let tries = 1; ; tries++) {
      const doc = await this.sequence
        .findOneAndUpdate({ _id: 'outbox' }, { $inc: { value: count } }, { upsert: true, new: true })
        .lean<SequenceDoc>();
      if (doc) return doc.value - count + 1;
      // An answer without the document (the local store gives one to concurrent upserts, the
      // increment applied): which numbers were taken is unknown, so new ones are taken and those
      // stay unused, as a failed batch's do. Never a reason to fail the events' writer.
      if (tries >= 3) throw new Error('the store answered the outbox counter without its value three times');
    }
  }
}
