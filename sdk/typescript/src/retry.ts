import { randomUUID } from 'node:crypto';
import { errorOf } from './errors';

export interface RetryOptions {
  /** Tries after the first (default 3). */
  maxRetries: number;
  /** The longest wait between tries, whatever `Retry-After` says (default 30 s). */
  maxDelayMs: number;
  sleep?: (ms: number) => Promise<void>;
}

/**
 * A fetch that tries again what is safe to try again: a POST gets an `Idempotency-Key` before its
 * first try (unless the caller gave one), so every try of it is the same request to the API, which
 * answers a repeat with the first answer. Tried again: 429 `rate_limited`, 503 (the API or one of
 * its services away), 409 `idempotency_in_progress` (the first try still running), and a request
 * whose connection failed; each after `Retry-After` when the API says it, else a growing wait.
 */
export function retryingFetch(
  base: (request: Request) => Promise<Response>,
  opts: RetryOptions,
): (request: Request) => Promise<Response> {
  const sleep = opts.sleep ?? ((ms: number) => new Promise<void>((r) => setTimeout(r, ms)));
  return async (request) => {
    if (request.method === 'POST' && !request.headers.has('idempotency-key'))
      request.headers.set('idempotency-key', randomUUID());
    for (let attempt = 0; ; attempt++) {
      let response: Response | undefined;
      let failure: Error | undefined;
      try {
        response = await base(request.clone());
      } catch (err) {
        failure = err instanceof Error ? err : new Error(String(err));
      }
      const again = attempt < opts.maxRetries && (failure !== undefined || (await worthRetrying(response!)));
      if (!again) {
        if (failure !== undefined) throw failure;
        return response!;
      }
      const retryAfter = Number(response?.headers.get('retry-after'));
      const waitMs =
        response?.headers.has('retry-after') && Number.isFinite(retryAfter) ? retryAfter * 1000 : 250 * 2 ** attempt;
      await sleep(Math.min(opts.maxDelayMs, waitMs));
    }
  };
}

async function worthRetrying(response: Response): Promise<boolean> {
  if (response.status === 429 || response.status === 503) return true;
  if (response.status !== 409) return false;
  return (await errorOf(response)).reasonCode === 'idempotency_in_progress';
}
