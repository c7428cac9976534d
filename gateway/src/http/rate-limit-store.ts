import type { ClientRateLimitInfo, Options, Store } from 'express-rate-limit';

/**
 * Per-key fixed-window counters in this replica's memory, for express-rate-limit.
 *
 * Why not the library's MemoryStore: its `increment` returns the live counter object, and the
 * middleware reads `totalHits` only after an `await`; a burst of concurrent requests on one key
 * then all read the final count, so every request of the burst is refused, including the ones
 * within the limit. This store returns a snapshot taken at the increment.
 */
export class SnapshotMemoryStore implements Store {
  readonly localKeys = true;
  private windowMs = 1_000;
  private readonly counters = new Map<string, { totalHits: number; resetTime: Date }>();
  private sweeper: NodeJS.Timeout | undefined;

  init(options: Options): void {
    this.windowMs = options.windowMs;
    // Expired windows are dropped in bulk, so keys that stop calling do not stay in memory.
    this.sweeper = setInterval(() => this.sweep(), Math.max(this.windowMs * 60, 60_000));
    this.sweeper.unref();
  }

  increment(key: string, now = Date.now()): ClientRateLimitInfo {
    let counter = this.counters.get(key);
    if (!counter || counter.resetTime.getTime() <= now) {
      counter = { totalHits: 0, resetTime: new Date(now + this.windowMs) };
      this.counters.set(key, counter);
    }
    counter.totalHits++;
    return { totalHits: counter.totalHits, resetTime: counter.resetTime };
  }

  decrement(key: string): void {
    const counter = this.counters.get(key);
    if (counter && counter.totalHits > 0) counter.totalHits--;
  }

  resetKey(key: string): void {
    this.counters.delete(key);
  }

  shutdown(): void {
    clearInterval(this.sweeper);
  }

  sweep(now = Date.now()): void {
    for (const [key, counter] of this.counters) if (counter.resetTime.getTime() <= now) this.counters.delete(key);
  }
}
