import { Coalescer, stringIds, TenantCollection, type QueryShape, type TenantScope } from '@voiceapi/kit';
import { Schema, type Connection, type Model } from 'mongoose';
import type { EndedCall, CallOutcome } from '../domain/call';

interface OutcomeDoc extends Omit<CallOutcome, 'callId'> {
  /** The call id. */
  _id: string;
}
const outcomeSchema = new Schema<OutcomeDoc>(
  {
    _id: String,
    tenantId: { type: String, required: true },
    direction: { type: String, required: true },
    status: { type: String, required: true },
    creditsCharged: { type: Number, required: true },
    creditsError: String,
    balanceAfter: Number,
    transactionId: String,
    ledgerSeq: Number,
    sandbox: { type: Boolean, required: true },
    durationSeconds: { type: Number, required: true },
    endedAt: { type: Date, required: true },
    billedAt: { type: Date, required: true },
    contactId: String,
    campaignId: String,
    agentId: String,
    fromNumber: String,
  },
  { collection: 'call_outcomes', versionKey: false },
);
// No secondary index: read by `_id` (the call id) only.

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
 * Call outcomes are keyed by call id alone: call ids are unique across tenants (telephony makes
 * them), and every read checks the tenant it expects.
 */
export class CallStore {
  private readonly outcomes: TenantCollection<OutcomeDoc, string>;
  private readonly unsettled: TenantCollection<UnsettledDoc, string>;
  /** Outcomes settled while an insert is under way are inserted together next. */
  private readonly settled = new Coalescer<CallOutcome, CallOutcome>(async (outcomes) => {
    const taken = await this.insertOutcomes(outcomes);
    return Promise.all(outcomes.map(async (o, i) => (taken[i] ? o : (await this.outcome(o.callId))!)));
  });

  constructor(conn: Connection) {
    this.outcomes = new TenantCollection(
      (conn.models.CallOutcome as Model<OutcomeDoc> | undefined) ??
        conn.model<OutcomeDoc>('CallOutcome', outcomeSchema),
      stringIds,
      [],
    );
    this.unsettled = new TenantCollection(
      (conn.models.UnsettledCall as Model<UnsettledDoc> | undefined) ??
        conn.model<UnsettledDoc>('UnsettledCall', unsettledSchema),
      stringIds,
      unsettledQueryShapes,
    );
  }

  /** The call's outcome, whichever tenant it names (the caller checks it names the one it expects). */
  async outcome(callId: string): Promise<CallOutcome | undefined> {
    const doc = await this.outcomes
      .crossTenant('an outcome is found by its call id, then its tenant checked')
      .findById(callId);
    return doc ? fromDoc(doc) : undefined;
  }

  /**
   * Stores the outcome unless the call has one; answers the one that stands. Outcomes settled
   * while an insert is under way are inserted together next (one write for many calls).
   */
  settle(outcome: CallOutcome): Promise<CallOutcome> {
    return this.settled.run(outcome);
  }

  /** Inserts each outcome; per outcome, whether it was the first for its call. */
  private async insertOutcomes(outcomes: CallOutcome[]): Promise<boolean[]> {
    const taken = outcomes.map(() => true);
    const seen = new Set<string>();
    const docs: { i: number; doc: OutcomeDoc }[] = [];
    outcomes.forEach(({ callId, ...rest }, i) => {
      // Two ends of one call in the same batch: the first is inserted, the second answers it.
      if (seen.has(callId)) taken[i] = false;
      else docs.push({ i, doc: { _id: callId, ...rest } });
      seen.add(callId);
    });
    const batch = this.outcomes.crossTenant(
      'outcomes of several tenants are inserted in one write, each with its own tenant',
    );
    for (const at of await batch.insertManyUnordered(docs.map((d) => d.doc))) taken[docs[at]!.i] = false;
    return taken;
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

function fromDoc({ _id, ...rest }: OutcomeDoc): CallOutcome {
  return { callId: _id, ...rest };
}
