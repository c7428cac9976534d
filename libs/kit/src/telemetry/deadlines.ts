import type { Attributes } from '@opentelemetry/api';
import type { TypedCounter } from './metrics';

/** A count with no attributes of its own (`late` aside). */
export type NoAttributes = Record<string, never>;

/** What a deadline SLI counts: each item once, `late` "false" (done in time) or "true". */
export type LateAttributes<A extends Attributes> = A & { late: 'true' | 'false' };

interface Waiting<A> {
  sinceMs: number;
  attributes: A;
}

export interface DeadlineOptions<A> {
  /** The attribute sets the SLI reads, created at 0. */
  initial: readonly A[];
  /** Whether an item's wait is not ours (e.g. the tenant's own lines all busy): never counted late, in time when done. */
  excused?: (key: string, sinceMs: number, attributes: A) => boolean;
  /** Whether this process still holds the item; one it let go (handed over) is forgotten at the next sweep. */
  held?: (key: string) => boolean;
  now?: () => number;
}

/** How often the waiting items are looked at: a late one is counted within this of its deadline. */
const SWEEP_EVERY_MS = 1_000;
/** Late items remembered until done (so not counted twice); past this many, the oldest are let go. */
const LATE_REMEMBERED = 100_000;

/**
 * An SLI counted as tenants feel it: each item (a lead to dial, a call to charge, an event to send) counts once,
 * in time if it is done within `deadlineMs` of its start, late otherwise, and a late one is counted the moment
 * its deadline passes while it still waits, not when it is finally done: an outage burns the budget while it
 * lasts, and the counter's series exist from the start (`late` "true" and "false" at 0), so the SLI never
 * vanishes while it does. In memory: an item this process lets go (`drop`: handed to another replica, or lost in
 * a crash) is counted by whoever takes it up next with its original start.
 */
export class DeadlineCounter<A extends Attributes> {
  private readonly waiting = new Map<string, Waiting<A>>();
  private readonly countedLate = new Set<string>();
  private timer: NodeJS.Timeout | undefined;

  private readonly excused: NonNullable<DeadlineOptions<A>['excused']>;
  private readonly held: NonNullable<DeadlineOptions<A>['held']>;
  private readonly now: () => number;

  constructor(
    private readonly counter: TypedCounter<LateAttributes<A>>,
    private readonly deadlineMs: number,
    opts: DeadlineOptions<A>,
  ) {
    this.excused = opts.excused ?? (() => false);
    this.held = opts.held ?? (() => true);
    this.now = opts.now ?? Date.now;
    for (const a of opts.initial) {
      counter.add(0, { ...a, late: 'false' });
      counter.add(0, { ...a, late: 'true' });
    }
  }

  /** An item waits from `since` (idempotent: a repeat keeps the first start). */
  wait(key: string, since: Date, attributes: A): void {
    if (this.countedLate.has(key) || this.waiting.has(key)) return;
    this.waiting.set(key, { sinceMs: since.getTime(), attributes });
    this.timer ??= setInterval(() => this.sweep(), SWEEP_EVERY_MS).unref();
  }

  /**
   * Done at `at`: counted in time or late, unless its lateness was counted already. Also for items never waited.
   * `excused` as the caller knows it, else as the options say.
   */
  done(key: string, since: Date, at: Date, attributes: A, excused?: boolean): void {
    const w = this.waiting.get(key);
    this.forget(key);
    if (this.countedLate.delete(key)) return;
    const sinceMs = w?.sinceMs ?? since.getTime();
    const a = w?.attributes ?? attributes;
    const late = at.getTime() - sinceMs > this.deadlineMs && !(excused ?? this.excused(key, sinceMs, a));
    this.counter.add(1, { ...a, late: late ? 'true' : 'false' });
  }

  /** No longer this process's to count (handed over, or no longer wanted): forgotten, not counted. */
  drop(key: string): void {
    this.forget(key);
  }

  /** Counts each item waiting past its deadline as late, once; run every second while any waits. */
  sweep(): void {
    const now = this.now();
    for (const [key, w] of this.waiting) {
      if (!this.held(key)) {
        this.waiting.delete(key);
        continue;
      }
      if (now - w.sinceMs <= this.deadlineMs || this.excused(key, w.sinceMs, w.attributes)) continue;
      this.waiting.delete(key);
      this.countedLate.add(key);
      this.counter.add(1, { ...w.attributes, late: 'true' });
    }
    for (const key of this.countedLate) {
      if (this.countedLate.size <= LATE_REMEMBERED) break;
      this.countedLate.delete(key);
    }
    if (this.waiting.size === 0) this.stopSweeping();
  }

  /** Items waiting now (for tests and gauges). */
  get size(): number {
    return this.waiting.size;
  }

  private forget(key: string): void {
    this.waiting.delete(key);
    if (this.waiting.size === 0) this.stopSweeping();
  }

  private stopSweeping(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }
}
