import { LRUCache } from 'lru-cache';
import type { Logger } from '../logger';
import { ChangeFeed, type WakeSource } from './change-feed';

/**
 * A read-through cache of a store's hot reads (an agent on every inbound call, a number's settings
 * on every dial): answers from memory; its owner forgets what this process changes. With a
 * `source` it also forgets everything when any replica changes the collection (a change stream,
 * which the store works through on every write: decision 0141); without one, another replica's
 * change is seen once the TTL has passed, so the TTL is the staleness a reader accepts. Concurrent
 * misses for one key share one read. Values are kept as the store returned them: a sealed secret
 * stays sealed here.
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

  /**
   * Calls `listener` on every change the cache learns of, once it has forgotten what it held: a
   * reader woken by it never gets an answer older than the change from the cache.
   */
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

  /** Forgets everything (a change somewhere in the collection). */
  forgetAll(): void {
    this.generation++;
    this.entries.clear();
    this.loading.clear();
  }
}
