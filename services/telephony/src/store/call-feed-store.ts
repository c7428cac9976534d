import { type TenantScope } from '@voiceapi/kit/grpc';
import { isDuplicateKeyError, modelOf, stringIds, TenantCollection, type QueryShape } from '@voiceapi/kit/mongo';
import { Schema, type Connection } from 'mongoose';
import type { CallChangeKind, CallSnapshot, FeedEntry } from '../domain/call-feed';

interface FeedDoc {
  /** `<callId>:<change>`: each change of a call is in the feed once. */
  _id: string;
  tenantId: string;
  /** The tenant's own order, from 1 without gaps: a stream's cursor. */
  seq: number;
  change: CallChangeKind;
  /** The call right after the change (as `GET /calls` shows it). */
  call: CallSnapshot;
  at: Date;
}

export const feedSchema = new Schema<FeedDoc>(
  {
    _id: String,
    tenantId: { type: String, required: true },
    seq: { type: Number, required: true },
    change: { type: String, required: true },
    call: { type: Schema.Types.Mixed, required: true },
    at: { type: Date, required: true },
  },
  { collection: 'call_feed', versionKey: false, minimize: false },
);
// Serves `a tenant's changes after a cursor` and its last change; unique: one change per place in a tenant's order.
feedSchema.index({ tenantId: 1, seq: 1 }, { unique: true });
// Serves `older than kept`: the sweep deletes a bounded batch per pass.
feedSchema.index({ at: 1 });
// Serves `a call's changes`: erasing a deleted contact's numbers from them.
feedSchema.index({ tenantId: 1, 'call.id': 1 });
export const feedQueryShapes: QueryShape[] = [
  { name: "a tenant's changes after a cursor", equality: ['tenantId'], sort: { seq: 1 }, range: ['seq'] },
  { name: "a tenant's last change", equality: ['tenantId'], sort: { seq: -1 } },
  { name: 'older than kept', equality: [], range: ['at'] },
  { name: "a call's changes", equality: ['tenantId', 'call.id'] },
];

const toEntry = (d: FeedDoc): FeedEntry => ({ seq: d.seq, change: d.change, call: d.call, at: d.at });

/** Each tenant's call changes in a gapless order (`seq`), written by one writer at a time (its partition's owner). */
export class CallFeedStore {
  private readonly entries: TenantCollection<FeedDoc, string>;
  /** The last place written per tenant, as this writer knows it (dropped when another writer was found). */
  private readonly heads = new Map<string, number>();
  /** The last append asked per tenant in this process (see `append`). */
  private readonly appending = new Map<string, Promise<void>>();

  constructor(conn: Connection) {
    this.entries = new TenantCollection(modelOf(conn, 'CallFeedEntry', feedSchema), stringIds, feedQueryShapes);
  }

  /** Wakes the readers of the tenant whose change was written (`fields` carries the tenant). */
  changes(seen: (tenantId: string) => void) {
    return {
      ...this.entries.changes(['insert']),
      fields: ['tenantId'],
      seen: (doc: Record<string, unknown>) => seen(String(doc.tenantId)),
    };
  }

  /** Appends at the tenant's next place (past another writer's entry there); false for a redelivery. */
  append(
    scope: TenantScope,
    change: { id: string; change: CallChangeKind; call: CallSnapshot; at: Date },
  ): Promise<boolean> {
    // One tenant's appends in this process go one after the other: they would only take each other's places.
    const previous = this.appending.get(scope.tenantId) ?? Promise.resolve();
    const next = previous.then(
      () => this.appendNow(scope, change),
      () => this.appendNow(scope, change),
    );
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    this.appending.set(scope.tenantId, settled);
    void settled.then(() => {
      if (this.appending.get(scope.tenantId) === settled) this.appending.delete(scope.tenantId);
    });
    return next;
  }

  private async appendNow(
    scope: TenantScope,
    change: { id: string; change: CallChangeKind; call: CallSnapshot; at: Date },
  ): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      const seq = (await this.head(scope)) + 1;
      try {
        await this.entries.insert(scope, {
          _id: change.id,
          seq,
          change: change.change,
          call: change.call,
          at: change.at,
        });
        this.heads.set(scope.tenantId, seq);
        return true;
      } catch (err) {
        if (!isDuplicateKeyError(err)) throw err;
        this.heads.delete(scope.tenantId);
        if (await this.entries.findById(scope, change.id)) return false;
        if (attempt >= 30) throw err;
        // A random pause lets this writer in between another's run of places (ten tries without it could all lose).
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(attempt, 10)));
      }
    }
  }

  /** The tenant's last place (0: none yet), as this writer knows it. */
  async head(scope: TenantScope): Promise<number> {
    return this.heads.get(scope.tenantId) ?? this.lastWritten(scope);
  }

  /** The tenant's last place, read from the store (a reader's "now"). */
  async lastWritten(scope: TenantScope): Promise<number> {
    const [last] = await this.entries.find(scope, {}, { sort: { seq: -1 }, limit: 1, projection: { seq: 1 } });
    return last?.seq ?? 0;
  }

  /** Up to `limit` changes after `seq`, in order. */
  async after(scope: TenantScope, seq: number, limit: number): Promise<FeedEntry[]> {
    return (await this.entries.find(scope, { seq: { $gt: seq } }, { sort: { seq: 1 }, limit })).map(toEntry);
  }

  /** Erases the personal data of these calls' changes (a deleted contact's calls), as on the calls themselves. */
  async erase(scope: TenantScope, callIds: readonly string[]): Promise<void> {
    if (callIds.length === 0) return;
    await this.entries.updateMany(
      scope,
      { 'call.id': { $in: [...callIds] } },
      {
        $unset: { 'call.fromNumber': 1, 'call.toNumber': 1, 'call.summary': 1 },
        $set: { 'call.hasTranscript': false, 'call.hasAnalysis': false, 'call.hasRecording': false },
      },
    );
  }

  /** Deletes up to `limit` changes older than `before`; answers how many. */
  async prune(before: Date, limit: number): Promise<number> {
    const all = this.entries.crossTenant('the retention sweep deletes what every tenant may no longer resume from');
    const old = await all.find({ at: { $lt: before } }, { limit });
    if (old.length === 0) return 0;
    await all.deleteMany({ _id: { $in: old.map((d) => d._id) }, at: { $lt: before } });
    return old.length;
  }
}
