import { randomUUID } from 'node:crypto';
import { Schema, type Connection, type Model } from 'mongoose';
import type { Logger } from '../logger';
import type { EventProducer, OutgoingEvent } from './client';

interface OutboxDoc {
  _id: string;
  topic: string;
  key: string;
  type: string;
  payload: Buffer;
  createdAt: Date;
  /** The relay publishes an event only from this moment on (see `add` and `release`). */
  availableAt: Date;
  publishedAt: Date | null;
}

const outboxSchema = new Schema<OutboxDoc>(
  {
    _id: { type: String },
    topic: { type: String, required: true },
    key: { type: String, required: true },
    type: { type: String, required: true },
    payload: { type: Buffer, required: true },
    createdAt: { type: Date, required: true },
    availableAt: { type: Date, required: true },
    publishedAt: { type: Date, default: null },
  },
  { versionKey: false, collection: 'outbox' },
);
// Serves the relay's scan (unpublished and available, oldest first) and the sweep of published ones.
outboxSchema.index({ publishedAt: 1, availableAt: 1, createdAt: 1 });

/**
 * Transactional outbox without transactions (FerretDB has none). An event is stored, held, in the
 * service's own database before the state change it announces; after the write the caller
 * releases it and the relay publishes it at once. Consumers therefore never hear of a change
 * before it is readable. If the process dies between the two steps, the relay publishes the held
 * event once the hold expires: no event is lost, at the cost that it may announce a write that
 * failed, or arrive twice. Use it for events whose consumers re-read state or dedupe by event id.
 */
export class Outbox {
  readonly model: Model<OutboxDoc>;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;

  constructor(
    conn: Connection,
    private readonly producer: EventProducer,
    private readonly log: Logger,
    private readonly opts: { intervalMs: number; retainPublishedMs: number; holdMs: number } = {
      intervalMs: 1_000,
      retainPublishedMs: 24 * 3600_000,
      holdMs: 30_000,
    },
  ) {
    this.model = conn.models.Outbox ?? conn.model<OutboxDoc>('Outbox', outboxSchema);
  }

  /**
   * Stores events durably. `hold: true` keeps them from the relay until `release` (or until the
   * hold expires, should the caller die first); otherwise they are available at once. Returns
   * their ids. Call `flush()` to publish without waiting for the timer.
   */
  async add(events: OutgoingEvent[], opts: { hold?: boolean } = {}): Promise<string[]> {
    const now = new Date();
    const availableAt = opts.hold ? new Date(now.getTime() + this.opts.holdMs) : now;
    const docs = events.map((e) => ({ ...e, _id: e.eventId ?? randomUUID(), payload: Buffer.from(e.payload), createdAt: now, availableAt }));
    await this.model.insertMany(docs);
    return docs.map((d) => d._id);
  }

  /** Makes held events available to the relay (call after the state write they announce). */
  async release(ids: string[]): Promise<void> {
    await this.model.updateMany({ _id: { $in: ids }, publishedAt: null }, { $set: { availableAt: new Date() } });
  }

  /** Publishes pending events now; concurrent calls coalesce into one more pass. */
  flush(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      try {
        do {
          this.again = false;
          await this.relayOnce();
        } while (this.again);
      } finally {
        this.running = undefined;
      }
    })();
    return this.running;
  }

  start(): void {
    let ticks = 0;
    this.timer = setInterval(() => {
      this.flush().catch((err: unknown) => this.log.warn({ err }, 'outbox relay failed; will retry'));
      // Published events are kept for a day; removing them once a minute is plenty.
      if (++ticks % 60 === 0) void this.sweep();
    }, this.opts.intervalMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.running?.catch(() => undefined);
  }

  private async relayOnce(): Promise<void> {
    for (;;) {
      const batch = await this.model
        .find({ publishedAt: null, availableAt: { $lte: new Date() } })
        .sort({ createdAt: 1 })
        .limit(100)
        .lean();
      if (batch.length === 0) return;
      await this.producer.publish(
        batch.map((d) => ({ topic: d.topic, key: d.key, type: d.type, payload: asBytes(d.payload), eventId: d._id })),
      );
      await this.model.updateMany({ _id: { $in: batch.map((d) => d._id) } }, { $set: { publishedAt: new Date() } });
      if (batch.length < 100) return;
    }
  }

  /** Explicit expiry instead of a TTL index, which FerretDB lacks. */
  private async sweep(): Promise<void> {
    const before = new Date(Date.now() - this.opts.retainPublishedMs);
    await this.model.deleteMany({ publishedAt: { $ne: null, $lt: before } }).catch(() => undefined);
  }
}

/** Lean reads return BSON Binary for Buffer fields. */
function asBytes(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value;
  const binary = value as { buffer?: Uint8Array; value?: () => Uint8Array };
  if (binary.buffer instanceof Uint8Array) return binary.buffer;
  throw new Error('outbox payload is not binary');
}
