import { Schema, type Connection, type Model } from 'mongoose';
import { isDuplicateKeyError } from '../mongo/connect';
import { declareQueries } from '../mongo/query-check';
import type { QueryShape } from '../mongo/query-shapes';

interface InboxDoc {
  /** `<group>:<eventId>`: looked up by `_id` alone, the one lookup every store serves fast. */
  _id: string;
  processedAt: Date;
}

export const inboxSchema = new Schema<InboxDoc>(
  { _id: String, processedAt: { type: Date, required: true } },
  { versionKey: false, collection: 'inbox' },
);
// Serves the expiry sweep: processedAt < cutoff.
inboxSchema.index({ processedAt: 1 });
export const inboxQueryShapes: QueryShape[] = [{ name: 'sweep', equality: [], range: ['processedAt'] }];

/**
 * Remembers which events a consumer group has handled, so a redelivered or replayed event is
 * skipped. An id is recorded after its handler succeeded: a crash in between means one more
 * delivery, which the handler's own idempotency absorbs (write effects keyed by the event id).
 */
export class Inbox {
  readonly model: Model<InboxDoc>;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    conn: Connection,
    private readonly opts: { retainMs: number; sweepEveryMs: number } = { retainMs: 7 * 24 * 3600_000, sweepEveryMs: 3600_000 },
  ) {
    this.model = conn.models.Inbox ?? conn.model<InboxDoc>('Inbox', inboxSchema);
    declareQueries(this.model, inboxQueryShapes);
  }

  async seen(group: string, eventId: string): Promise<boolean> {
    return (await this.model.exists({ _id: `${group}:${eventId}` })) !== null;
  }

  async record(group: string, eventId: string): Promise<void> {
    try {
      await this.model.create({ _id: `${group}:${eventId}`, processedAt: new Date() });
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
    }
  }

  /** Removes ids older than the retention, a bounded batch per pass at the caller's pace. */
  async sweep(now = Date.now()): Promise<number> {
    return (await this.model.deleteMany({ processedAt: { $lt: new Date(now - this.opts.retainMs) } })).deletedCount;
  }

  /** Sweeps on a timer from now on (once per inbox, however many subscribers share it). */
  scheduleSweep(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.sweep().catch(() => undefined), this.opts.sweepEveryMs);
    this.timer.unref();
  }

  stopSweep(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }
}
