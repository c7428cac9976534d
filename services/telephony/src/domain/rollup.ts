import { DateTime } from 'luxon';
import type { Call, Direction } from './call';

/** Quarter hours: days in any zone (30/45-minute offsets too) are whole buckets; a month is ≤ 2,976 per direction. */
export const BUCKET_MS = 15 * 60_000;

export interface Totals {
  calls: number;
  completed: number;
  durationSeconds: number;
  creditsCharged: number;
}

export interface Rollup {
  tenantId: string;
  direction: Direction;
  start: Date;
  totals: Totals;
  byAgent: (Totals & { key: string | null })[];
  byCampaign: (Totals & { key: string | null })[];
}

export type GroupBy = 'day' | 'agent' | 'campaign';

export interface Bucket extends Totals {
  key: string | null;
  avgDurationSeconds: number;
}

export const bucketStart = (at: Date): Date => new Date(Math.floor(at.getTime() / BUCKET_MS) * BUCKET_MS);

/**
 * A bucket is the sum of its minutes (parts), each recomputed from its own calls: a change reads one minute's calls,
 * not the quarter hour's (45,000 at 50 calls a second, a 0.7 s read).
 */
export const PART_MS = 60_000;
export const partStart = (at: Date): Date => new Date(Math.floor(at.getTime() / PART_MS) * PART_MS);

const zero = (): Totals => ({ calls: 0, completed: 0, durationSeconds: 0, creditsCharged: 0 });

function add(t: Totals, c: Pick<Call, 'outcome' | 'durationSeconds' | 'creditsCharged'>): void {
  t.calls += 1;
  if (c.outcome === 'completed') t.completed += 1;
  t.durationSeconds += c.durationSeconds;
  t.creditsCharged += c.creditsCharged ?? 0;
}

/** One bucket, computed from its calls; only ended calls count. */
export function rollUp(tenantId: string, direction: Direction, start: Date, calls: readonly Call[]): Rollup {
  const totals = zero();
  const agents = new Map<string | null, Totals>();
  const campaigns = new Map<string | null, Totals>();
  for (const c of calls) {
    if (!c.outcome) continue;
    add(totals, c);
    for (const [map, key] of [
      [agents, c.agentId ?? null],
      [campaigns, c.campaignId ?? null],
    ] as const) {
      const t = map.get(key) ?? zero();
      add(t, c);
      map.set(key, t);
    }
  }
  const list = (m: Map<string | null, Totals>) => [...m].map(([key, t]) => ({ key, ...t }));
  return { tenantId, direction, start, totals, byAgent: list(agents), byCampaign: list(campaigns) };
}

/** One rollup that sums others (a bucket from its parts); rows in a stable order, by key. */
export function sumRollups(
  tenantId: string,
  direction: Direction,
  start: Date,
  parts: readonly Pick<Rollup, 'totals' | 'byAgent' | 'byCampaign'>[],
): Rollup {
  const totals = zero();
  const agents = new Map<string | null, Totals>();
  const campaigns = new Map<string | null, Totals>();
  const merge = (into: Totals, t: Totals) => {
    into.calls += t.calls;
    into.completed += t.completed;
    into.durationSeconds += t.durationSeconds;
    into.creditsCharged += t.creditsCharged;
  };
  for (const p of parts) {
    merge(totals, p.totals);
    for (const [map, rows] of [
      [agents, p.byAgent],
      [campaigns, p.byCampaign],
    ] as const) {
      for (const row of rows) {
        const t = map.get(row.key) ?? zero();
        merge(t, row);
        map.set(row.key, t);
      }
    }
  }
  const list = (m: Map<string | null, Totals>) =>
    [...m].map(([key, t]) => ({ key, ...t })).sort((a, b) => String(a.key).localeCompare(String(b.key)));
  return { tenantId, direction, start, totals, byAgent: list(agents), byCampaign: list(campaigns) };
}

/** The API's buckets from the rollups of a range: days in the zone, agents or campaigns. */
export function group(rollups: readonly Rollup[], by: GroupBy, timeZone: string): Bucket[] {
  const out = new Map<string | null, Totals>();
  const merge = (key: string | null, t: Totals) => {
    const acc = out.get(key) ?? zero();
    acc.calls += t.calls;
    acc.completed += t.completed;
    acc.durationSeconds += t.durationSeconds;
    acc.creditsCharged += t.creditsCharged;
    out.set(key, acc);
  };
  for (const r of rollups) {
    if (by === 'day') {
      if (r.totals.calls > 0) merge(DateTime.fromJSDate(r.start, { zone: timeZone }).toISODate(), r.totals);
    } else {
      for (const row of by === 'agent' ? r.byAgent : r.byCampaign) merge(row.key, row);
    }
  }
  const buckets = [...out].map(([key, t]) => ({
    key,
    ...t,
    avgDurationSeconds: t.calls > 0 ? Math.round((t.durationSeconds / t.calls) * 100) / 100 : 0,
  }));
  // Days in order; agents and campaigns busiest first (then by key, so the order is stable).
  return by === 'day'
    ? buckets.sort((a, b) => String(a.key).localeCompare(String(b.key)))
    : buckets.sort((a, b) => b.calls - a.calls || String(a.key).localeCompare(String(b.key)));
}
