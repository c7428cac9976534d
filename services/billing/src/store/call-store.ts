import { type TenantScope } from '@voiceapi/kit/grpc';
import { modelOf, stringIds, TenantCollection, type QueryShape } from '@voiceapi/kit/mongo';
import { Schema, type Connection } from 'mongoose';
import type { EndedCall } from '../domain/call';

/** Ended calls whose charge failed: the sweeper's small working set (deleted once settled). */
interface UnsettledDoc extends Omit<EndedCall, 'callId'> {
  /** The call id. */
  _id: string;
  receivedAt: Date;
}
export const unsettledSchema = new Schema<UnsettledDoc>(
  {
    _id: String,
    tenantId: { type: String, required: true },
    direction: { type: String, required: true },
    durationSeconds: { type: Number, required: true },
    sandbox: { type: Boolean, required: true },
    free: { type: Boolean, required: true },
    holdFailed: { type: Boolean, required: true },
    endedAt: { type: Date, required: true },
    contactId: String,
    campaignId: String,
    agentId: String,
    fromNumber: String,
    expired: Boolean,
    receivedAt: { type: Date, required: true },
  },
  { collection: 'calls_unsettled', versionKey: false },
);
// Serves `due` (the sweeper: calls received before a moment).
unsettledSchema.index({ receivedAt: 1 });
export const unsettledQueryShapes: QueryShape[] = [{ name: 'due', equality: [], range: ['receivedAt'] }];

/**
 * Ended calls whose charge failed, for the sweeper. A call's outcome is the wallet entry that posts
 * `call:<id>` (decision 0139): before 1.3, billing also kept it in `call_outcomes`, no longer written.
 */
export class CallStore {
  private readonly unsettled: TenantCollection<UnsettledDoc, string>;

  constructor(conn: Connection) {
    this.unsettled = new TenantCollection(
      modelOf(conn, 'UnsettledCall', unsettledSchema),
      stringIds,
      unsettledQueryShapes,
    );
  }

  async remember(scope: TenantScope, call: EndedCall): Promise<void> {
    const { callId, tenantId: _owner, ...rest } = call;
    await this.unsettled.upsertById(scope, callId, { $setOnInsert: { ...rest, receivedAt: new Date() } });
  }

  async forget(scope: TenantScope, callId: string): Promise<void> {
    await this.unsettled.deleteById(scope, callId);
  }

  /** Ended calls of every tenant received before `before` and still not settled. */
  async unsettledSince(before: Date): Promise<EndedCall[]> {
    const docs = await this.unsettled
      .crossTenant('the sweeper settles the failed charges of every tenant')
      .find({ receivedAt: { $lt: before } }, { limit: 500 });
    return docs.map(({ _id, receivedAt: _r, ...rest }) => ({ callId: _id, ...rest }));
  }
}
