import type { Response } from 'express';
import type { AuthenticatedKey } from '../auth/key-cache';
import { fail } from './errors';

/** Counts a request against its key's limit; when over it, answers 429 and returns false. */
export interface RateLimiter {
  admit(res: Response, auth: AuthenticatedKey | undefined): boolean;
}

/**
 * Per-key fixed window in this replica's memory (decisions 0005 and 0021): the window opens at a
 * key's first request and lasts `windowMs`; the limit is the key's `rateLimitPerSecond` or the
 * default. Answers carry the IETF draft-6 headers `RateLimit-Policy`, `RateLimit-Limit`,
 * `RateLimit-Remaining`, `RateLimit-Reset`, and a refusal `Retry-After`, as express-rate-limit
 * did. Synchronous, so a concurrent burst is counted exactly.
 */
export class FixedWindowLimiter implements RateLimiter {
  private readonly counters = new Map<string, { hits: number; resetAt: number }>();
  private readonly windowSeconds: string;
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    private readonly defaultLimit: number,
    private readonly windowMs = 1_000,
  ) {
    this.windowSeconds = String(Math.ceil(windowMs / 1_000));
    // Expired windows are dropped in bulk, so keys that stop calling do not stay in memory.
    this.sweeper = setInterval(() => this.sweep(), Math.max(windowMs * 60, 60_000));
    this.sweeper.unref();
  }

  admit(res: Response, auth: AuthenticatedKey | undefined, now = Date.now()): boolean {
    const key = auth?.keyId ?? 'anonymous';
    const limit = auth?.rateLimitPerSecond ?? this.defaultLimit;
    let counter = this.counters.get(key);
    if (!counter || counter.resetAt <= now) {
      counter = { hits: 0, resetAt: now + this.windowMs };
      this.counters.set(key, counter);
    }
    const hits = ++counter.hits;
    const reset = Math.max(0, Math.ceil((counter.resetAt - now) / 1_000));
    res.setHeader('RateLimit-Policy', `${limit};w=${this.windowSeconds}`);
    res.setHeader('RateLimit-Limit', limit);
    res.setHeader('RateLimit-Remaining', hits < limit ? limit - hits : 0);
    res.setHeader('RateLimit-Reset', reset);
    if (hits <= limit) return true;
    res.setHeader('Retry-After', Math.max(1, reset));
    fail(res, 'rate_limited', 'rate limit exceeded for this API key; retry after the Retry-After interval');
    return false;
  }

  sweep(now = Date.now()): void {
    for (const [key, counter] of this.counters) if (counter.resetAt <= now) this.counters.delete(key);
  }

  close(): void {
    clearInterval(this.sweeper);
  }
}
