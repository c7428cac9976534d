import { scopeOfRecord } from '@voiceapi/kit';
import { BUCKET_MS, rollUp } from '../domain/rollup';
import type { CallStore } from '../store/call-store';
import type { RollupStore } from '../store/rollup-store';

/** Recomputes the buckets whose calls changed, from their calls (one replica runs the passes: a worker on a lease). */
export class RollupRecompute {
  constructor(private readonly d: { rollups: RollupStore; calls: CallStore }) {}

  /** One pass; the number of buckets recomputed. */
  async runOnce(limit = 200): Promise<number> {
    const marks = await this.d.rollups.dirtyBuckets(limit);
    for (const m of marks) {
      const scope = scopeOfRecord(m.tenantId);
      const calls = await this.d.calls.startedBetween(scope, m.direction, m.start, new Date(m.start.getTime() + BUCKET_MS));
      await this.d.rollups.put(scope, rollUp(m.tenantId, m.direction, m.start, calls));
      await this.d.rollups.clean(scope, m);
    }
    return marks.length;
  }
}
