import { scopeOfRecord } from '@voiceapi/kit/grpc';
import { PART_MS, rollUp, sumRollups, type Rollup } from '../domain/rollup';
import type { CallStore } from '../store/call-store';
import type { RollupStore } from '../store/rollup-store';

/** Recomputes marked buckets: each marked minute from its own calls, then the bucket as their sum. */
export class RollupRecompute {
  constructor(private readonly d: { rollups: RollupStore; calls: CallStore }) {}

  /** One pass; the number of buckets recomputed. */
  async runOnce(limit = 200): Promise<number> {
    const marks = await this.d.rollups.dirtyBuckets(limit);
    for (const m of marks) {
      const scope = scopeOfRecord(m.tenantId);
      const changed: Rollup[] = [];
      for (const minute of m.minutes) {
        const calls = await this.d.calls.startedBetween(
          scope,
          m.direction,
          minute,
          new Date(minute.getTime() + PART_MS),
        );
        changed.push(rollUp(m.tenantId, m.direction, minute, calls));
      }
      await this.d.rollups.putParts(scope, m.start, changed);
      const parts = await this.d.rollups.partsOfBucket(scope, m.direction, m.start);
      await this.d.rollups.put(scope, sumRollups(m.tenantId, m.direction, m.start, parts));
      await this.d.rollups.clean(scope, m);
    }
    return marks.length;
  }
}
