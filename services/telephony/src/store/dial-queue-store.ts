import { scopeOfRecord, type TenantScope } from '@voiceapi/kit/grpc';
import { modelOf, stringIds, TenantCollection, type QueryShape } from '@voiceapi/kit/mongo';
import { Schema, type Connection } from 'mongoose';
import type { QueuedDial } from '../domain/dial';

interface QueuedDoc extends Omit<QueuedDial, 'dialId'> {
  _id: string;
}

export const queuedSchema = new Schema<QueuedDoc>(
  {
    _id: String,
    tenantId: { type: String, required: true },
    contactId: { type: String, required: true },
    campaignId: { type: String, required: true },
    phone: { type: String, required: true },
    maxCallSeconds: { type: Number, required: true },
    agentName: String,
    fromNumber: String,
    queuedAt: { type: Date, required: true },
    notBefore: { type: Date, required: true },
    requestedAt: Date,
    attempt: Number,
  },
  { collection: 'dial_queue', versionKey: false },
);
// Serves `a tenant's due dials` and `tenants waiting` (a distinct scan of its prefix); placed dials are deleted.
queuedSchema.index({ tenantId: 1, notBefore: 1 });
// Serves `a contact's dials` (dropped when the contact is cancelled or erased).
queuedSchema.index({ tenantId: 1, contactId: 1 });
export const queuedQueryShapes: QueryShape[] = [
  { name: 'tenants waiting', equality: [] },
  { name: "a tenant's due dials", equality: ['tenantId'], sort: { notBefore: 1 }, range: ['notBefore'] },
  { name: "a contact's dials", equality: ['tenantId', 'contactId'] },
];

/** Dials spilled after a long wait (decision 0147), held by the lease holder until placed (before 0147: every dial). */
export class DialQueueStore {
  private readonly queue: TenantCollection<QueuedDoc, string>;

  constructor(conn: Connection) {
    this.queue = new TenantCollection(modelOf(conn, 'QueuedDial', queuedSchema), stringIds, queuedQueryShapes);
  }

  /** Dials written to wait here (a duplicate is here already). */
  async keep(dials: readonly QueuedDial[]): Promise<void> {
    await Promise.all(
      dials.map(({ dialId, tenantId, ...rest }) =>
        this.queue.insertShared(scopeOfRecord(tenantId), { _id: dialId, ...rest }),
      ),
    );
  }

  async removeContact(scope: TenantScope, contactId: string): Promise<void> {
    await this.queue.deleteMany(scope, { contactId });
  }

  /** The tenants with dials in the queue (due or not). */
  async tenantsWaiting(): Promise<string[]> {
    return this.queue.crossTenant('the dispatcher serves every tenant with dials waiting').distinct('tenantId');
  }

  /** A tenant's dials due by `now`, the longest due first. */
  async due(scope: TenantScope, now: Date, limit: number): Promise<QueuedDial[]> {
    const docs = await this.queue.find(scope, { notBefore: { $lte: now } }, { sort: { notBefore: 1 }, limit });
    return docs.map(({ _id, ...rest }) => ({ dialId: _id, ...rest }));
  }

  /** Whether the dial is still waiting (not yet rung, dropped or forgotten). */
  async has(scope: TenantScope, dialId: string): Promise<boolean> {
    return (await this.queue.findById(scope, dialId, { _id: 1 })) !== null;
  }

  async remove(scope: TenantScope, dialId: string): Promise<void> {
    await this.queue.deleteById(scope, dialId);
  }
}
