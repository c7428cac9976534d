import { Coalescer, stringIds, TenantCollection, type QueryShape, type TenantScope } from '@voiceapi/kit';
import { Schema, type Connection, type Model } from 'mongoose';
import type { Direction } from '../domain/call';
import type { Rollup } from '../domain/rollup';

interface RollupDoc extends Rollup {
  /** `<tenant>|<direction>|<bucket start ISO>`. */
  _id: string;
}

const totals = { calls: Number, completed: Number, durationSeconds: Number, creditsCharged: Number };
export const rollupSchema = new Schema<RollupDoc>(
  {
    _id: String,
    tenantId: { type: String, required: true },
    direction: { type: String, required: true },
    start: { type: Date, required: true },
    totals: { _id: false, ...totals },
    byAgent: [{ _id: false, key: { type: String, default: null }, ...totals }],
    byCampaign: [{ _id: false, key: { type: String, default: null }, ...totals }],
  },
  { collection: 'call_rollups', versionKey: false },
);
// Serves `range` (both directions) and `range of a direction`.
rollupSchema.index({ tenantId: 1, start: 1 });
rollupSchema.index({ tenantId: 1, direction: 1, start: 1 });
export const rollupQueryShapes: QueryShape[] = [
  { name: 'range', equality: ['tenantId'], range: ['start'] },
  { name: 'range of a direction', equality: ['tenantId', 'direction'], range: ['start'] },
];

export interface DirtyDoc {
  /** The bucket's rollup id. */
  _id: string;
  tenantId: string;
  direction: Direction;
  start: Date;
  markedAt: Date;
}

export const dirtySchema = new Schema<DirtyDoc>(
  { _id: String, tenantId: { type: String, required: true }, direction: { type: String, required: true }, start: { type: Date, required: true }, markedAt: { type: Date, required: true } },
  { collection: 'call_rollups_dirty', versionKey: false },
);
// Serves `oldest marks` (the recompute takes the buckets marked longest ago first).
dirtySchema.index({ markedAt: 1 });
export const dirtyQueryShapes: QueryShape[] = [{ name: 'oldest marks', equality: [], sort: { markedAt: 1 } }];

export const rollupId = (tenantId: string, direction: Direction, start: Date): string => `${tenantId}|${direction}|${start.toISOString()}`;

/**
 * Analytics rollups, and the buckets whose calls changed since they were computed. A bucket is
 * recomputed from its calls rather than incremented, so a replayed event or a crash between two
 * writes can neither count a call twice nor lose it.
 */
export class RollupStore {
  private readonly rollups: TenantCollection<RollupDoc, string>;
  private readonly dirty: TenantCollection<DirtyDoc, string>;
  /**
   * Marks asked while one write is under way are written together next, one per bucket: a burst
   * of calls ending in the same minute costs one write, not one per call.
   */
  private readonly marks = new Coalescer<DirtyDoc, void>(async (marks) => {
    const latest = new Map<string, DirtyDoc>();
    for (const m of marks) if ((latest.get(m._id)?.markedAt.getTime() ?? -Infinity) <= m.markedAt.getTime()) latest.set(m._id, m);
    await this.dirty.crossTenant('the marks of calls ending together are written at once; each names its own tenant').setMany([...latest.values()]);
    return marks.map(() => undefined);
  });

  constructor(conn: Connection) {
    this.rollups = new TenantCollection((conn.models.CallRollup as Model<RollupDoc> | undefined) ?? conn.model<RollupDoc>('CallRollup', rollupSchema), stringIds, rollupQueryShapes);
    this.dirty = new TenantCollection((conn.models.CallRollupDirty as Model<DirtyDoc> | undefined) ?? conn.model<DirtyDoc>('CallRollupDirty', dirtySchema), stringIds, dirtyQueryShapes);
  }

  /** A bucket marked for recompute: wakes the rollup worker. */
  changes() {
    return this.dirty.changes(['insert', 'update']);
  }

  markDirty(scope: TenantScope, direction: Direction, start: Date, now: Date): Promise<void> {
    return this.marks.run({ _id: rollupId(scope.tenantId, direction, start), tenantId: scope.tenantId, direction, start, markedAt: now });
  }

  /** The buckets of every tenant marked longest ago. */
  async dirtyBuckets(limit: number): Promise<DirtyDoc[]> {
    return this.dirty.crossTenant('the recompute serves the changed buckets of every tenant').find({}, { sort: { markedAt: 1 }, limit });
  }

  /** Forgets the mark unless it was set again since it was read (then the bucket is recomputed again). */
  async clean(scope: TenantScope, mark: DirtyDoc): Promise<void> {
    await this.dirty.deleteById(scope, mark._id, { where: { markedAt: mark.markedAt } });
  }

  async put(scope: TenantScope, r: Rollup): Promise<void> {
    const { tenantId: _owner, ...bucket } = r;
    await this.rollups.upsertById(scope, rollupId(scope.tenantId, r.direction, r.start), { $set: bucket });
  }

  async range(scope: TenantScope, from: Date, to: Date, direction?: Direction): Promise<Rollup[]> {
    return this.rollups.find(scope, { ...(direction && { direction }), start: { $gte: from, $lt: to } });
  }
}
