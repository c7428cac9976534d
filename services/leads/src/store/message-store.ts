import { createHash } from 'node:crypto';
import { type ReadBack } from '@voiceapi/kit/events';
import { type TenantScope } from '@voiceapi/kit/grpc';
import { modelOf, objectIds, TenantCollection, type QueryShape } from '@voiceapi/kit/mongo';
import { Schema, Types, type Connection } from 'mongoose';
import type { MessageChannel } from '../domain/contact';
import type { Message } from '../domain/message';

interface MessageDoc extends Omit<Message, 'id'> {
  _id: Types.ObjectId;
  tenantId: string;
}

export const messageSchema = new Schema<MessageDoc>(
  {
    tenantId: { type: String, required: true },
    contactId: { type: String, required: true },
    channel: { type: String, required: true },
    templateId: { type: String, required: true },
    to: { type: String, required: true },
    subject: String,
    body: { type: String, required: true },
    status: { type: String, required: true },
    providerId: String,
    createdAt: { type: Date, required: true },
    sentAt: Date,
  },
  { collection: 'messages', versionKey: false, minimize: true },
);
// Serves `newest` and `newest-by-channel` (the operator's list).
messageSchema.index({ tenantId: 1, createdAt: -1, _id: -1 });
messageSchema.index({ tenantId: 1, channel: 1, createdAt: -1, _id: -1 });
// Serves `contact` (erasing a contact's messages).
messageSchema.index({ tenantId: 1, contactId: 1 });
const NEWEST_FIRST = { createdAt: -1, _id: -1 } as const;
export const messageQueryShapes: QueryShape[] = [
  { name: 'newest', equality: ['tenantId'], sort: NEWEST_FIRST },
  { name: 'newest-by-channel', equality: ['tenantId', 'channel'], sort: NEWEST_FIRST },
  { name: 'contact', equality: ['tenantId', 'contactId'] },
];

function toMessage(doc: MessageDoc): Message {
  const { _id, tenantId: _t, ...rest } = doc;
  return { id: _id.toString(), ...rest };
}

export class MessageStore {
  private readonly messages: TenantCollection<MessageDoc>;

  constructor(conn: Connection) {
    this.messages = new TenantCollection(modelOf(conn, 'Message', messageSchema), objectIds, messageQueryShapes);
  }

  newId(): string {
    return new Types.ObjectId().toString();
  }

  /**
   * The id of a new contact's message on a channel, made from the contact's id (its time, then a
   * hash): an ingest sent again makes the same ids, so its messages are not made twice.
   */
  idFor(contactId: string, channel: MessageChannel): string {
    return contactId.slice(0, 8) + createHash('sha256').update(`${contactId}:${channel}`).digest('hex').slice(0, 16);
  }

  /** One tenant's new messages in one round trip; any stored before (a retried ingest) are left as they are. */
  async createMany(scope: TenantScope, messages: readonly Message[]): Promise<void> {
    await this.messages.insertNew(
      scope,
      messages.map(({ id, ...rest }) => ({ ...rest, _id: new Types.ObjectId(id) })),
    );
  }

  /** A message's creation happened when it is there. */
  stored(scope: TenantScope, id: string): ReadBack {
    return this.messages.readBack(scope, id, 'present');
  }

  async get(scope: TenantScope, id: string): Promise<Message | null> {
    const doc = await this.messages.findById(scope, id);
    return doc && toMessage(doc);
  }

  async markSent(scope: TenantScope, id: string, providerId: string, now: Date): Promise<void> {
    await this.messages.updateById(scope, id, { $set: { status: 'sent', providerId, sentAt: now } });
  }

  async list(scope: TenantScope, channel: MessageChannel | undefined, limit: number): Promise<Message[]> {
    const docs = await this.messages.find(scope, channel ? { channel } : {}, { sort: NEWEST_FIRST, limit });
    return docs.map(toMessage);
  }

  eraseContact(scope: TenantScope, contactId: string): Promise<number> {
    return this.messages.deleteMany(scope, { contactId });
  }
}
