import { setTimeout as sleep } from 'node:timers/promises';
import { isReason } from './errors';
import { isStoreUnavailable } from './mongo/unavailable';

/** A failure that may pass by itself: the store or a backing service away, or slow. */
export function isTransient(err: unknown): boolean {
  if (isStoreUnavailable(err)) return true;
  return isReason(err, 'service_unavailable') || isReason(err, 'upstream_timeout');
}

export interface TransientRetry {
  /** Epoch milliseconds after which the last failure is thrown. */
  deadline: number;
  initialDelayMs?: number;
  maxDelayMs?: number;
  onRetry?: (err: unknown, attempt: number) => void;
}

/** Retries `step` on transient failures with capped doubling waits until the deadline; `step` must be repeatable. */
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
