import { Coalescer, stringIds, TenantCollection, type TenantScope } from '@voiceapi/kit';
import { LRUCache } from 'lru-cache';
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
  {
    _id: String,
    tenantId: { type: String, required: true },
    type: { type: String, required: true },
    body: { type: String, required: true },
    createdAt: { type: Date, required: true },
  },
  { collection: 'messages', versionKey: false },
);
// No secondary index: a message is only ever read by its id.

/** Bodies kept in memory: the messages stored or read last. */
const RECENT_BODIES = 10_000;

/**
 * Message bodies, written once, read by `_id`: every endpoint and every attempt sends these bytes.
 * The bodies stored or read last are kept in memory (a message goes to several endpoints, its
 * first attempt follows its insert at once, and retries resend it).
 */
export class MessageStore {
  private readonly messages: TenantCollection<MessageDoc, string>;
  /** Read with `peek`: a body is kept by being stored or read from the store, not by being answered from here. */
  private readonly recent = new LRUCache<string, string>({ max: RECENT_BODIES });
  /** Messages fanned out while an insert is under way are inserted together next (a repeat is skipped). */
  private readonly inserts = new Coalescer<MessageDoc, void>(async (docs) => {
    await this.messages
      .crossTenant('the messages of events fanned out together are stored in one write, each with its tenant')
      .insertManyUnordered(docs);
    return docs.map(() => undefined);
  });

  constructor(conn: Connection) {
    this.messages = new TenantCollection(
      (conn.models.WebhookMessage as Model<MessageDoc> | undefined) ??
        conn.model<MessageDoc>('WebhookMessage', messageSchema),
      stringIds,
      [],
    );
  }

  async insertOnce(scope: TenantScope, m: WebhookMessage, now: Date): Promise<void> {
    await this.inserts.run({ _id: m.id, tenantId: scope.tenantId, type: m.type, body: m.body, createdAt: now });
    this.remember(m.id, m.body);
  }

  async body(id: string): Promise<string | null> {
    const known = this.recent.peek(id);
    if (known !== undefined) return known;
    const body =
      (await this.messages.crossTenant("the dispatcher sends a delivery's message by its id").findById(id))?.body ??
      null;
    if (body !== null) this.remember(id, body);
    return body;
  }

  private remember(id: string, body: string): void {
    this.recent.set(id, body); // past RECENT_BODIES, the least recently remembered is forgotten
  }
}
