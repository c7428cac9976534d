import { setTimeout as sleep } from 'node:timers/promises';
import { isReason } from './errors';
import { isStoreUnavailable } from './mongo/unavailable';

/**
 * True when a failure passes by itself: the store away for now, or a backing service unavailable
 * or slow to answer. Asking again later may succeed; any other failure would fail again.
 */
export function isTransient(err: unknown): boolean {
  if (isStoreUnavailable(err)) return true;
  return isReason(err, 'service_unavailable') || isReason(err, 'upstream_timeout');
}

export interface TransientRetry {
  /** Epoch milliseconds after which the last failure is thrown. */
  deadline: number;
  initialDelayMs?: number;
  maxDelayMs?: number;
  /** Called before each wait, with the failure that caused it. */
  onRetry?: (err: unknown, attempt: number) => void;
}

/**
 * Runs `step` until it succeeds; a transient failure is tried again (doubling waits, capped)
 * until the deadline, any other failure is thrown at once. `step` must be safe to repeat.
 */
export async function retryTransient<T>(step: () => Promise<T>, opts: TransientRetry): Promise<T> {
  const max = opts.maxDelayMs ?? 2_000;
  let delay = opts.initialDelayMs ?? 100;
  for (let attempt = 1; ; attempt++) {
    try {
      return await step();
    } catch (err) {
      if (!isTransient(err) || Date.now() + delay > opts.deadline) throw err;
      opts.onRetry?.(err, attempt);
      await sleep(delay);
      delay = Math.min(max, delay * 2);
    }
  }
}
