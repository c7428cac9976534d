import { isDuplicateKeyError } from '@voiceapi/kit';
import { Schema, type Connection, type Model } from 'mongoose';
import type { WebhookMessage } from '../domain/messages';

interface MessageDoc {
  /** `msg_…`: the `webhook-id`. */
  _id: string;
  tenantId: string;
  type: string;
  body: string;
  createdAt: Date;
}

const messageSchema = new Schema<MessageDoc>(
  { _id: String, tenantId: { type: String, required: true }, type: { type: String, required: true }, body: { type: String, required: true }, createdAt: { type: Date, required: true } },
  { collection: 'messages', versionKey: false },
);
// No secondary index: a message is only ever read by its id.

/** Message bodies, written once, read by `_id`: every endpoint and every attempt sends these bytes. */
export class MessageStore {
  private readonly messages: Model<MessageDoc>;

  constructor(conn: Connection) {
    this.messages = conn.models.WebhookMessage ?? conn.model<MessageDoc>('WebhookMessage', messageSchema);
  }

  async insertOnce(m: WebhookMessage, now: Date): Promise<void> {
    await this.messages.create({ _id: m.id, tenantId: m.tenantId, type: m.type, body: m.body, createdAt: now }).catch((err: unknown) => {
      if (!isDuplicateKeyError(err)) throw err;
    });
  }

  async body(id: string): Promise<string | null> {
    return (await this.messages.findById(id).lean<MessageDoc>())?.body ?? null;
  }
}
