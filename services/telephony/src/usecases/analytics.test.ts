import { DomainError } from '@voiceapi/kit/errors';
import { requireTenant } from '@voiceapi/kit/grpc';
import type { Rollup } from '../domain/rollup';
import type { RollupStore } from '../store/rollup-store';
import { Analytics } from './analytics';

// Analytics reads rollups only; these are the query's rules and what is asked of the store.
const scope = requireTenant({ tenantId: 't1', keyMode: 'live' });
const totals = (calls: number) => ({ calls, completed: calls, durationSeconds: 60 * calls, creditsCharged: 2 * calls });
const rollup = (start: string, calls: number): Rollup => ({
  tenantId: 't1',
  direction: 'outbound',
  start: new Date(start),
  totals: totals(calls),
  byAgent: [],
  byCampaign: [],
});
const problemsOf = (p: Promise<unknown>) =>
  p.then(
    () => [],
    (e: unknown) => (e instanceof DomainError ? (e.details ?? []).map((d) => d.path) : [String(e)]),
  );

function analyticsOver(rollups: Rollup[]) {
  const asked: unknown[][] = [];
  const store = { range: async (...args: unknown[]) => (asked.push(args), rollups) } as unknown as RollupStore;
  return { analytics: new Analytics(store), asked };
}

describe('Analytics', () => {
  it('sums the tenant’s rollups by day in the asked time zone, from the quarter hour of `from`', async () => {
    const { analytics, asked } = analyticsOver([rollup('2026-11-24T23:30:00Z', 2), rollup('2026-11-25T08:00:00Z', 3)]);
    const days = await analytics.calls(scope, {
      groupBy: 'day',
      from: new Date('2026-11-24T23:40:00Z'),
      to: new Date('2026-11-26T00:00:00Z'),
      timeZone: 'Europe/Berlin',
    });
    expect(days.map((d) => [d.key, d.calls])).toEqual([['2026-11-25', 5]]);
    expect(asked).toEqual([[scope, new Date('2026-11-24T23:30:00Z'), new Date('2026-11-26T00:00:00Z'), undefined]]);
  });

  it('names every bad field of a query at once, before reading anything', async () => {
    const { analytics, asked } = analyticsOver([]);
    const bad = {
      groupBy: 'week',
      direction: 'sideways',
      from: new Date('2026-11-25'),
      to: new Date('2026-11-24'),
      timeZone: 'Mars/Olympus',
    };
    expect(await problemsOf(analytics.calls(scope, bad))).toEqual(['groupBy', 'direction', 'from', 'timezone']);
    expect(
      await problemsOf(
        analytics.calls(scope, { groupBy: 'day', from: new Date('2024-01-01'), to: new Date('2026-01-01') }),
      ),
    ).toEqual(['from']);
    expect(asked).toEqual([]);
  });
});
