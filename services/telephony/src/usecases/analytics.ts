import { validationError } from '@voiceapi/kit/errors';
import { type TenantScope } from '@voiceapi/kit/grpc';
import { IANAZone } from 'luxon';
import { DIRECTIONS, type Direction } from '../domain/call';
import { bucketStart, group, type Bucket, type GroupBy } from '../domain/rollup';
import type { RollupStore } from '../store/rollup-store';

const GROUPS: readonly GroupBy[] = ['day', 'agent', 'campaign'];
const MAX_RANGE_MS = 366 * 24 * 3600_000;

export interface AnalyticsQuery {
  groupBy: string;
  from: Date;
  to: Date;
  direction?: string;
  timeZone?: string;
}

/** Call aggregates from quarter-hour rollups, never a scan of calls; `from` and `to` apply at bucket granularity. */
export class Analytics {
  constructor(private readonly rollups: RollupStore) {}

  async calls(scope: TenantScope, q: AnalyticsQuery): Promise<Bucket[]> {
    const problems = [];
    if (!GROUPS.includes(q.groupBy as GroupBy))
      problems.push({ path: 'groupBy', message: `must be one of ${GROUPS.join(', ')}` });
    if (q.direction !== undefined && !DIRECTIONS.includes(q.direction as Direction))
      problems.push({ path: 'direction', message: `must be one of ${DIRECTIONS.join(', ')}` });
    if (Number.isNaN(q.from.getTime())) problems.push({ path: 'from', message: 'must be a date-time' });
    if (Number.isNaN(q.to.getTime())) problems.push({ path: 'to', message: 'must be a date-time' });
    else if (q.from >= q.to) problems.push({ path: 'from', message: 'must be before to' });
    else if (q.to.getTime() - q.from.getTime() > MAX_RANGE_MS)
      problems.push({ path: 'from', message: 'the range is at most 366 days' });
    if (q.timeZone !== undefined && !IANAZone.isValidZone(q.timeZone))
      problems.push({ path: 'timezone', message: 'must be an IANA time zone, e.g. Europe/Berlin' });
    if (problems.length > 0) throw validationError('invalid analytics query', problems);
    const rollups = await this.rollups.range(scope, bucketStart(q.from), q.to, q.direction as Direction | undefined);
    return group(rollups, q.groupBy as GroupBy, q.timeZone ?? 'UTC');
  }
}
