import { Schema, type Connection, type Model } from 'mongoose';
import { isDuplicateKeyError } from '../mongo/connect';

interface InboxDoc {
  _id: string;
  processedAt: Date;
}

const inboxSchema = new Schema<InboxDoc>(
  { _id: String, processedAt: { type: Date, required: true } },
  { versionKey: false, collection: 'inbox' },
);
// Serves the expiry sweep.
inboxSchema.index({ processedAt: 1 });

/**
 * Remembers which events a consumer group has processed, so a replayed or redelivered event is
 * skipped. An id is recorded after its handler succeeded: a crash in between means one more
 * delivery, which the handler's own idempotency absorbs.
 */
export class Inbox {
  readonly model: Model<InboxDoc>;

  constructor(
    conn: Connection,
    private readonly retainMs = 7 * 24 * 3600_000,
  ) {
    this.model = conn.models.Inbox ?? conn.model<InboxDoc>('Inbox', inboxSchema);
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

  async sweep(now = Date.now()): Promise<void> {
    await this.model.deleteMany({ processedAt: { $lt: new Date(now - this.retainMs) } });
  }
}
