import { Schema, type Connection, type Model } from 'mongoose';
import { modelOf } from '../mongo/connect';
import type { QueryShape } from '../mongo/query-shapes';

// The outbox's documents: waiting events (`outbox`), their order's counter, and events Kafka refused.

export interface OutboxDoc {
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
  /** While held: its `ReadBack` as extended JSON, so any filter keys can be stored. */
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
// The relay's scan (small: published events are deleted). Unique: a clashing add retries with a fresh number.
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

/** Events Kafka refused for good, kept with the error for an operator to replay. */
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

/** Places in the publishing order: from the store's counter, or for new keys from this process's block. */
export class OutboxSequence {
  private readonly sequence: Model<SequenceDoc>;
  /** Unused numbers reserved for new keys: [next, end). */
  private block = { next: 0, end: 0 };

  constructor(conn: Connection) {
    this.sequence = modelOf(conn, 'OutboxSequence', sequenceSchema);
  }

  /** `count` consecutive numbers for new keys, from this process's block (refilled when short). */
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
   * Takes `count` consecutive numbers from the counter; returns the first. It is one shared document, so a process's
   * concurrent adds take theirs together (`Outbox.adds`); numbers come in time order, keeping each key's order.
   */
  async reserve(count: number): Promise<number> {
    for (let tries = 1; ; tries++) {
      const doc = await this.sequence
        .findOneAndUpdate({ _id: 'outbox' }, { $inc: { value: count } }, { upsert: true, new: true })
        .lean<SequenceDoc>();
      if (doc) return doc.value - count + 1;
      // The local store may answer concurrent upserts without the document (increment applied): take new numbers.
      if (tries >= 3) throw new Error('the store answered the outbox counter without its value three times');
    }
  }
}
