import { isDuplicateKeyError, stringIds, TenantCollection, type TenantScope } from '@voiceapi/kit';
import { Schema, type Connection } from 'mongoose';
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
  private readonly messages: TenantCollection<MessageDoc, string>;

  constructor(conn: Connection) {
    this.messages = new TenantCollection(conn.models.WebhookMessage ?? conn.model<MessageDoc>('WebhookMessage', messageSchema), stringIds, []);
  }

  async insertOnce(scope: TenantScope, m: WebhookMessage, now: Date): Promise<void> {
    await this.messages.insert(scope, { _id: m.id, type: m.type, body: m.body, createdAt: now }).catch((err: unknown) => {
      if (!isDuplicateKeyError(err)) throw err;
    });
  }

  async body(id: string): Promise<string | null> {
    return (await this.messages.crossTenant('the dispatcher sends a delivery\'s message by its id').findById(id))?.body ?? null;
  }
}
