import { nextAttemptAt, outcomeOf, parseDuration, parseSchedule, retryAfterOf } from './retry';

const now = new Date('2026-11-23T10:00:00Z');
const SCHEDULE = parseSchedule('0,5s,5m,30m,2h,5h,10h,10h');

describe('retry schedule', () => {
  it('reads the default schedule, and refuses what is not a duration', () => {
    expect(SCHEDULE).toEqual([0, 5_000, 300_000, 1_800_000, 7_200_000, 18_000_000, 36_000_000, 36_000_000]);
    expect(parseSchedule('0, 200ms, 1.5s')).toEqual([0, 200, 1_500]);
    expect(parseDuration('5d')).toBe(432_000_000);
    expect(() => parseSchedule('0,soon')).toThrow(/"soon" is not a duration/);
    expect(() => parseDuration('1h,2h')).toThrow(/not one duration/);
  });

  it('spaces the attempts by the schedule and gives up after the last', () => {
    const dueAfter = (step: number) => nextAttemptAt(SCHEDULE, step, now)?.getTime();
    expect([1, 2, 3, 4, 5, 6, 7].map((s) => (dueAfter(s)! - now.getTime()) / 1000)).toEqual([
      5, 300, 1800, 7200, 18000, 36000, 36000,
    ]);
    expect(nextAttemptAt(SCHEDULE, 8, now)).toBeNull();
  });

  it('lets Retry-After push an attempt later, never sooner, and never past the longest step', () => {
    expect(nextAttemptAt(SCHEDULE, 1, now, 60_000)!.getTime() - now.getTime()).toBe(60_000);
    expect(nextAttemptAt(SCHEDULE, 2, now, 1_000)!.getTime() - now.getTime()).toBe(300_000);
    expect(nextAttemptAt(SCHEDULE, 1, now, 7 * 86_400_000)!.getTime() - now.getTime()).toBe(36_000_000);
  });

  it('classifies answers: 2xx delivered, 410 gone, everything else retried', () => {
    expect(outcomeOf({ statusCode: 204 }, now)).toEqual({ kind: 'delivered', statusCode: 204 });
    expect(outcomeOf({ statusCode: 410 }, now)).toEqual({ kind: 'gone', statusCode: 410 });
    expect(outcomeOf({ statusCode: 301 }, now)).toEqual({ kind: 'failed', statusCode: 301 });
    expect(outcomeOf({ statusCode: 404 }, now)).toEqual({ kind: 'failed', statusCode: 404 });
    expect(outcomeOf({ statusCode: 500, retryAfter: '30' }, now)).toEqual({ kind: 'failed', statusCode: 500 });
    expect(outcomeOf({ statusCode: 429, retryAfter: '30' }, now)).toEqual({
      kind: 'failed',
      statusCode: 429,
      retryAfterMs: 30_000,
    });
    expect(outcomeOf({ statusCode: 503, retryAfter: 'Mon, 23 Nov 2026 10:02:00 GMT' }, now)).toEqual({
      kind: 'failed',
      statusCode: 503,
      retryAfterMs: 120_000,
    });
    expect(outcomeOf({ error: 'timeout' }, now)).toEqual({ kind: 'failed', error: 'timeout' });
  });

  it('reads Retry-After as seconds or a date, and ignores what it cannot read', () => {
    expect(retryAfterOf('120', now)).toBe(120_000);
    expect(retryAfterOf('Mon, 23 Nov 2026 09:00:00 GMT', now)).toBe(0);
    expect(retryAfterOf('soon', now)).toBeUndefined();
    expect(retryAfterOf(undefined, now)).toBeUndefined();
  });
});
