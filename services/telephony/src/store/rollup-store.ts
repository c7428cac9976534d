import { randomUUID } from 'node:crypto';
import { type TenantScope } from '@voiceapi/kit/grpc';
import { modelOf, stringIds, TenantCollection, type QueryShape } from '@voiceapi/kit/mongo';
import { Coalescer } from '@voiceapi/kit/work';
import { Schema, type Connection } from 'mongoose';
import type { Direction } from '../domain/call';
import { bucketStart, partStart, type Rollup } from '../domain/rollup';

interface RollupDoc extends Rollup {
  /** `<tenant>|<direction>|<bucket start ISO>`. */
  _id: string;
}

/** One minute of a bucket (`PART_MS`), recomputed from that minute's calls. */
interface PartDoc extends Rollup {
  /** `<tenant>|<direction>|<minute start ISO>`. */
  _id: string;
  bucket: Date;
}

const totals = { calls: Number, completed: Number, durationSeconds: Number, creditsCharged: Number };
const rollupFields = {
  _id: String,
  tenantId: { type: String, required: true },
  direction: { type: String, required: true },
  start: { type: Date, required: true },
  totals: { _id: false, ...totals },
  byAgent: [{ _id: false, key: { type: String, default: null }, ...totals }],
  byCampaign: [{ _id: false, key: { type: String, default: null }, ...totals }],
};
export const rollupSchema = new Schema<RollupDoc>(rollupFields, { collection: 'call_rollups', versionKey: false });
// Serves `range` (both directions) and `range of a direction`.
rollupSchema.index({ tenantId: 1, start: 1 });
rollupSchema.index({ tenantId: 1, direction: 1, start: 1 });
export const rollupQueryShapes: QueryShape[] = [
  { name: 'range', equality: ['tenantId'], range: ['start'] },
  { name: 'range of a direction', equality: ['tenantId', 'direction'], range: ['start'] },
];

export const partSchema = new Schema<PartDoc>(
  { ...rollupFields, bucket: { type: Date, required: true } },
  { collection: 'call_rollup_parts', versionKey: false },
);
// Serves `a bucket's parts`.
partSchema.index({ tenantId: 1, direction: 1, bucket: 1 });
export const partQueryShapes: QueryShape[] = [
  { name: "a bucket's parts", equality: ['tenantId', 'direction', 'bucket'] },
];

export interface DirtyDoc {
  /** The bucket's rollup id followed by `|minutes` (`markId`). */
  _id: string;
  tenantId: string;
  direction: Direction;
  start: Date;
  markedAt: Date;
  /** The parts (minute starts) whose calls changed. */
  minutes: Date[];
  /** New at every write, so the recompute forgets a mark only if unwritten since its read (`markedAt` may repeat). */
  rev: string;
}

export const dirtySchema = new Schema<DirtyDoc>(
  {
    _id: String,
    tenantId: { type: String, required: true },
    direction: { type: String, required: true },
    start: { type: Date, required: true },
    markedAt: { type: Date, required: true },
    minutes: { type: [Date], default: undefined },
    rev: String,
  },
  { collection: 'call_rollups_dirty', versionKey: false },
);
// Serves `oldest marks` (the recompute takes the buckets marked longest ago first).
dirtySchema.index({ markedAt: 1 });
export const dirtyQueryShapes: QueryShape[] = [{ name: 'oldest marks', equality: [], sort: { markedAt: 1 } }];

export const rollupId = (tenantId: string, direction: Direction, start: Date): string =>
  `${tenantId}|${direction}|${start.toISOString()}`;
const markId = (tenantId: string, direction: Direction, start: Date): string =>
  `${rollupId(tenantId, direction, start)}|minutes`;

/**
 * Analytics rollups, their parts, and dirty marks. A part is recomputed from its calls, not incremented, so a replay
 * or a crash can neither count a call twice nor lose it; a bucket is the sum of its parts.
 */
export class RollupStore {
  private readonly rollups: TenantCollection<RollupDoc, string>;
  private readonly parts: TenantCollection<PartDoc, string>;
  private readonly dirty: TenantCollection<DirtyDoc, string>;
  /** Marks asked during a write are merged per bucket and written next: a burst of ending calls costs one write. */
  private readonly marks = new Coalescer<Omit<DirtyDoc, 'rev'>, void>(async (marks) => {
    const latest = new Map<string, Omit<DirtyDoc, 'rev'>>();
    for (const m of marks) {
      const seen = latest.get(m._id);
      const minutes = [
        ...(seen?.minutes ?? []),
        ...m.minutes.filter((d) => !seen?.minutes.some((s) => s.getTime() === d.getTime())),
      ];
      latest.set(m._id, { ...(seen && seen.markedAt.getTime() > m.markedAt.getTime() ? seen : m), minutes });
    }
    await this.dirty
      .crossTenant('the marks of calls ending together are written at once; each names its own tenant')
      .upsertManyById(
        [...latest.values()].map(({ _id, tenantId, direction, start, markedAt, minutes }) => ({
          id: _id,
          tenantId,
          // Repeatable (a racing first write applies the batch again, with the same rev).
          update: {
            $set: { direction, start, markedAt, rev: randomUUID() },
            $addToSet: { minutes: { $each: minutes } },
          },
        })),
      );
    return marks.map(() => undefined);
  });

  constructor(conn: Connection) {
    this.rollups = new TenantCollection(modelOf(conn, 'CallRollup', rollupSchema), stringIds, rollupQueryShapes);
    this.parts = new TenantCollection(modelOf(conn, 'CallRollupPart', partSchema), stringIds, partQueryShapes);
    this.dirty = new TenantCollection(modelOf(conn, 'CallRollupDirty', dirtySchema), stringIds, dirtyQueryShapes);
  }

  /** A bucket marked for recompute: wakes the rollup worker. */
  changes() {
    return this.dirty.changes(['insert', 'update']);
  }

  /** The call that started then changed: its minute's part, and so its bucket, is recomputed. */
  markDirty(scope: TenantScope, direction: Direction, callStartedAt: Date, now: Date): Promise<void> {
    const start = bucketStart(callStartedAt);
    return this.marks.run({
      _id: markId(scope.tenantId, direction, start),
      tenantId: scope.tenantId,
      direction,
      start,
      markedAt: now,
      minutes: [partStart(callStartedAt)],
    });
  }

  /** The buckets of every tenant marked longest ago. */
  async dirtyBuckets(limit: number): Promise<DirtyDoc[]> {
    return this.dirty
      .crossTenant('the recompute serves the changed buckets of every tenant')
      .find({}, { sort: { markedAt: 1 }, limit });
  }

  /** Forgets the mark unless it was set again since it was read (then the bucket is recomputed again). */
  async clean(scope: TenantScope, mark: DirtyDoc): Promise<void> {
    await this.dirty.deleteById(scope, mark._id, { where: { rev: mark.rev } });
  }

  /** Stores parts (all of one bucket) in one write. */
  async putParts(scope: TenantScope, bucket: Date, parts: readonly Rollup[]): Promise<void> {
    await this.parts.crossTenant("a bucket's parts are written at once; each names its own tenant").upsertManyById(
      parts.map(({ tenantId: _owner, ...p }) => ({
        id: rollupId(scope.tenantId, p.direction, p.start),
        tenantId: scope.tenantId,
        update: { $set: { ...p, bucket } },
      })),
    );
  }

  async partsOfBucket(scope: TenantScope, direction: Direction, bucket: Date): Promise<Rollup[]> {
    return this.parts.find(scope, { direction, bucket });
  }

  async put(scope: TenantScope, r: Rollup): Promise<void> {
    const { tenantId: _owner, ...bucket } = r;
    await this.rollups.upsertById(scope, rollupId(scope.tenantId, r.direction, r.start), { $set: bucket });
  }

  async range(scope: TenantScope, from: Date, to: Date, direction?: Direction): Promise<Rollup[]> {
    return this.rollups.find(scope, { ...(direction && { direction }), start: { $gte: from, $lt: to } });
  }
}
