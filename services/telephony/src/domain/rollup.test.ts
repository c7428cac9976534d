import type { Call } from './call';
import { BUCKET_MS, bucketStart, group, PART_MS, partStart, rollUp, sumRollups } from './rollup';

const call = (p: Partial<Call>): Call =>
  ({
    id: 'c',
    tenantId: 't',
    direction: 'outbound',
    status: 'completed',
    outcome: 'completed',
    startedAt: new Date(),
    durationSeconds: 60,
    creditsCharged: 2,
    ...p,
  }) as Call;

describe('rollups', () => {
  it('buckets by quarter hour', () => {
    expect(bucketStart(new Date('2026-11-22T12:14:59.999Z')).toISOString()).toBe('2026-11-22T12:00:00.000Z');
    expect(bucketStart(new Date('2026-11-22T12:15:00Z')).toISOString()).toBe('2026-11-22T12:15:00.000Z');
    expect(BUCKET_MS).toBe(900_000);
  });

  it('counts ended calls only, by agent and campaign', () => {
    const r = rollUp('t', 'outbound', new Date(0), [
      call({ agentId: 'a1', campaignId: 'k1' }),
      call({
        agentId: 'a1',
        campaignId: 'k2',
        outcome: 'no_answer',
        status: 'no_answer',
        durationSeconds: 0,
        creditsCharged: 0,
      }),
      call({ campaignId: 'k1', outcome: 'voicemail', durationSeconds: 20, creditsCharged: 2 }),
      call({ status: 'in_progress', outcome: undefined }),
    ]);
    expect(r.totals).toEqual({ calls: 3, completed: 1, durationSeconds: 80, creditsCharged: 4 });
    expect(r.byAgent).toEqual(
      expect.arrayContaining([
        { key: 'a1', calls: 2, completed: 1, durationSeconds: 60, creditsCharged: 2 },
        { key: null, calls: 1, completed: 0, durationSeconds: 20, creditsCharged: 2 },
      ]),
    );
    expect(r.byCampaign.find((b) => b.key === 'k1')).toEqual({
      key: 'k1',
      calls: 2,
      completed: 1,
      durationSeconds: 80,
      creditsCharged: 4,
    });
  });

  it('keeps a bucket as the sum of its minutes: the same as computed from all its calls, whatever the order', () => {
    const bucket = new Date('2026-11-22T12:00:00Z');
    expect(BUCKET_MS / PART_MS).toBe(15);
    expect(partStart(new Date('2026-11-22T12:07:59.999Z')).toISOString()).toBe('2026-11-22T12:07:00.000Z');
    const outcomes = ['completed', 'no_answer', 'voicemail', undefined] as const;
    const calls = Array.from({ length: 200 }, (_, i) =>
      call({
        startedAt: new Date(bucket.getTime() + ((i * 7919) % BUCKET_MS)),
        outcome: outcomes[i % 4],
        durationSeconds: i % 90,
        creditsCharged: i % 3,
        ...(i % 5 > 0 && { agentId: `a${i % 5}` }),
        campaignId: `k${i % 3}`,
      }),
    );
    const whole = rollUp('t', 'outbound', bucket, calls);
    const minutes = Array.from({ length: BUCKET_MS / PART_MS }, (_, i) => new Date(bucket.getTime() + i * PART_MS));
    const parts = minutes.map((m) =>
      rollUp(
        't',
        'outbound',
        m,
        calls.filter((c) => partStart(c.startedAt).getTime() === m.getTime()),
      ),
    );
    const summed = sumRollups('t', 'outbound', bucket, parts.reverse());
    expect(summed.totals).toEqual(whole.totals);
    // The same rows, in a stable order (by key).
    const byKey = <R extends { key: string | null }>(rows: readonly R[]) =>
      [...rows].sort((a, b) => String(a.key).localeCompare(String(b.key)));
    expect(summed.byAgent).toEqual(byKey(whole.byAgent));
    expect(summed.byCampaign).toEqual(byKey(whole.byCampaign));
  });

  it('groups quarter hours into days of the asked time zone, half-hour offsets included', () => {
    const at = (iso: string) => rollUp('t', 'outbound', new Date(iso), [call({})]);
    // In Kolkata (UTC+5:30) 18:15 UTC on the 21st is 23:45 that day; 18:30 UTC is midnight, the 22nd.
    const rollups = [at('2026-11-21T18:15:00Z'), at('2026-11-21T18:30:00Z'), at('2026-11-21T18:45:00Z')];
    expect(group(rollups, 'day', 'UTC').map((b) => [b.key, b.calls])).toEqual([['2026-11-21', 3]]);
    expect(group(rollups, 'day', 'Asia/Kolkata').map((b) => [b.key, b.calls])).toEqual([
      ['2026-11-21', 1],
      ['2026-11-22', 2],
    ]);
    expect(group(rollups, 'day', 'UTC')[0]).toMatchObject({
      durationSeconds: 180,
      avgDurationSeconds: 60,
      creditsCharged: 6,
    });
  });
});
