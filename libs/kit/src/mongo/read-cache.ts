import { LRUCache } from 'lru-cache';
import type { Logger } from '../logger';
import { ChangeFeed, type WakeSource } from './change-feed';

/**
 * A read-through cache of hot reads; its owner forgets what this process changes, and concurrent misses of a key
 * share one read. With a `source` it forgets all when any replica changes the collection (a change stream, which
 * taxes every write: decision 0141); without, the TTL bounds staleness. Values stay as stored: secrets stay sealed.
 */
export class ReadCache<V extends NonNullable<unknown>> {
  private readonly entries: LRUCache<string, V>;
  private readonly loading = new Map<string, Promise<V | null>>();
  private readonly feed: ChangeFeed | undefined;
  /** Bumped on every change: a read that started before it must not fill the cache. */
  private generation = 0;
  private readonly listeners: (() => void)[] = [];

  constructor(o: { source?: WakeSource; ttlMs: number; max?: number; log: Logger }) {
    this.entries = new LRUCache<string, V>({ max: o.max ?? 10_000, ttl: o.ttlMs });
    this.feed =
      o.source &&
      new ChangeFeed(
        [o.source],
        () => {
          this.forgetAll();
          for (const listener of this.listeners) listener();
        },
        o.log,
      );
  }

  /** Calls `listener` on each change after the cache forgot, so a woken reader never reads an older answer. */
  onChange(listener: () => void): void {
    this.listeners.push(listener);
  }

  start(): void {
    this.feed?.start();
  }

  async stop(): Promise<void> {
    await this.feed?.stop();
  }

  /** The cached value, or what `load` reads (null: nothing, not cached). */
  async get(key: string, load: () => Promise<V | null>): Promise<V | null> {
    const hit = this.entries.get(key);
    if (hit !== undefined) return hit;
    const pending = this.loading.get(key);
    if (pending) return pending;
    const generation = this.generation;
    const read = load()
      .then((value) => {
        if (value !== null && generation === this.generation) this.entries.set(key, value);
        return value;
      })
      .finally(() => {
        if (this.loading.get(key) === read) this.loading.delete(key);
      });
    this.loading.set(key, read);
    return read;
  }

  /** Forgets one key now (this process changed it; the change stream tells the others). */
  forget(key: string): void {
    this.generation++;
    this.entries.delete(key);
    this.loading.delete(key);
  }

  forgetAll(): void {
    this.generation++;
    this.entries.clear();
    this.loading.clear();
  }
}
