/**
 * Retries, scheduled like Svix's. 2xx ends; 410 disables the endpoint; anything else is retried until the
 * schedule runs out. `Retry-After` (429, 503) can delay an attempt, never sooner, never past the longest step.
 */

const UNITS: Record<string, number> = { ms: 1, s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `0,5s,5m,30m,2h,5h,10h,10h` → delays in ms. */
export function parseSchedule(text: string): number[] {
  const steps = text.split(',').map((part) => {
    const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$/.exec(part);
    if (!m) throw new Error(`retry schedule step ${JSON.stringify(part)} is not a duration like 0, 500ms, 5s, 5m, 2h`);
    return Math.round(Number(m[1]) * UNITS[m[2] ?? 'ms']!);
  });
  if (steps.length === 0) throw new Error('the retry schedule needs at least one step');
  return steps;
}

/** A duration like `5d`, `24h`, `90s` in ms. */
export function parseDuration(text: string): number {
  const steps = parseSchedule(text);
  if (steps.length !== 1) throw new Error(`${JSON.stringify(text)} is not one duration`);
  return steps[0]!;
}

export type AttemptOutcome =
  | { kind: 'delivered'; statusCode: number }
  | { kind: 'gone'; statusCode: 410 }
  | { kind: 'failed'; statusCode?: number; error?: string; retryAfterMs?: number };

export function outcomeOf(
  answer: { statusCode: number; retryAfter?: string } | { error: string },
  now: Date,
): AttemptOutcome {
  if ('error' in answer) return { kind: 'failed', error: answer.error };
  const { statusCode } = answer;
  if (statusCode >= 200 && statusCode < 300) return { kind: 'delivered', statusCode };
  if (statusCode === 410) return { kind: 'gone', statusCode };
  const retryAfterMs = statusCode === 429 || statusCode === 503 ? retryAfterOf(answer.retryAfter, now) : undefined;
  return { kind: 'failed', statusCode, ...(retryAfterMs !== undefined && { retryAfterMs }) };
}

/** When the attempt after `step` attempts is due; null once the schedule is spent. */
export function nextAttemptAt(
  schedule: readonly number[],
  step: number,
  now: Date,
  retryAfterMs?: number,
): Date | null {
  if (step >= schedule.length) return null;
  const longest = Math.max(...schedule);
  const delay = Math.max(schedule[step]!, Math.min(retryAfterMs ?? 0, longest));
  return new Date(now.getTime() + delay);
}

/** `Retry-After` as seconds or an HTTP date, in ms from now; undefined when absent or unreadable. */
export function retryAfterOf(value: string | undefined, now: Date): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now.getTime());
}
