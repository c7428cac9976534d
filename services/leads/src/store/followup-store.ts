import { type TenantScope } from '@voiceapi/kit/grpc';
import { modelOf, objectIds, TenantCollection, type QueryShape } from '@voiceapi/kit/mongo';
import { Schema, Types, type Connection } from 'mongoose';
import type { FollowupStatus, Followup } from '../domain/followup';

interface FollowupDoc extends Omit<Followup, 'id'> {
  _id: Types.ObjectId;
  tenantId: string;
}

export const followupSchema = new Schema<FollowupDoc>(
  {
    tenantId: { type: String, required: true },
    contactId: { type: String, required: true },
    scheduledAt: { type: Date, required: true },
    channel: { type: String, required: true },
    note: String,
    status: { type: String, required: true },
    refusal: String,
    createdAt: { type: Date, required: true },
  },
  { collection: 'followups', versionKey: false, minimize: true },
);
// Serves `contact` (a contact's follow-ups: cancelling or erasing them).
followupSchema.index({ tenantId: 1, contactId: 1, status: 1 });
export const followupQueryShapes: QueryShape[] = [
  { name: 'contact', equality: ['tenantId', 'contactId', 'status'] },
  { name: 'erasing a contact', equality: ['tenantId', 'contactId'] },
];

function toFollowup(doc: FollowupDoc): Followup {
  const { _id, tenantId: _t, ...rest } = doc;
  return { id: _id.toString(), ...rest };
}

export class FollowupStore {
  private readonly followups: TenantCollection<FollowupDoc>;

  constructor(conn: Connection) {
    this.followups = new TenantCollection(modelOf(conn, 'Followup', followupSchema), objectIds, followupQueryShapes);
  }

  newId(): string {
    return new Types.ObjectId().toString();
  }

  async create(scope: TenantScope, f: Followup): Promise<Followup> {
    const { id, ...rest } = f;
    return toFollowup(await this.followups.insert(scope, { ...rest, _id: new Types.ObjectId(id) }));
  }

  async get(scope: TenantScope, id: string): Promise<Followup | null> {
    const doc = await this.followups.findById(scope, id);
    return doc && toFollowup(doc);
  }

  async finish(
    scope: TenantScope,
    id: string,
    status: Exclude<FollowupStatus, 'scheduled'>,
    refusal?: string,
  ): Promise<void> {
    await this.followups.updateById(
      scope,
      id,
      { $set: { status, ...(refusal && { refusal }) } },
      { where: { status: 'scheduled' } },
    );
  }

  /** Every still scheduled follow-up of the contact becomes `cancelled`; their ids. */
  async cancelPending(scope: TenantScope, contactId: string): Promise<string[]> {
    const pending = await this.followups.find(scope, { contactId, status: 'scheduled' });
    for (const f of pending)
      await this.followups.updateById(scope, f._id.toString(), { $set: { status: 'cancelled' } });
    return pending.map((f) => f._id.toString());
  }

  eraseContact(scope: TenantScope, contactId: string): Promise<number> {
    return this.followups.deleteMany(scope, { contactId });
  }
}
