import { validationError } from '@voiceapi/kit/errors';
import { type TenantScope } from '@voiceapi/kit/grpc';
import { type Logger } from '@voiceapi/kit/service';
import {
  FEED_KEPT_MS,
  formatCursor,
  parseCursor,
  passes,
  type CallChangeKind,
  type FeedCursor,
  type FeedEntry,
  type FeedFilter,
} from '../domain/call-feed';
import type { CallFeedStore } from '../store/call-feed-store';
import type { FeedFollowerStore } from '../store/feed-follower-store';

/** A cursor's change still missing this long after later ones appear is taken as gone. */
const GAP_GIVE_UP_MS = 5_000;
/** A clock this far ahead of ours still makes a cursor (clock skew between replicas). */
const FUTURE_SKEW_MS = 60_000;
/** Changes are kept this long past the resumable day, so a cursor near the limit still finds what follows it. */
const PRUNE_MARGIN_MS = 3600_000;

/**
 * Tenants whose changes are written to the feed: those that read their stream in the last day and an hour (no other
 * can resume from a cursor). A read marks its tenant first and writers ask per change, so no change is missed.
 */
export class FeedFollowers {
  /** Until when each known tenant follows. */
  private readonly known = new Map<string, number>();

  constructor(private readonly d: { store: FeedFollowerStore; now: () => Date }) {}

  async follows(scope: TenantScope): Promise<boolean> {
    const now = this.d.now().getTime();
    if ((this.known.get(scope.tenantId) ?? 0) > now) return true;
    this.known.delete(scope.tenantId);
    const until = (await this.d.store.until(scope))?.getTime() ?? 0;
    if (until <= now) return false;
    this.known.set(scope.tenantId, until);
    return true;
  }

  /** The tenant reads its stream: it follows for the next day and an hour (stored when less than a day is left). */
  async reading(scope: TenantScope): Promise<void> {
    const now = this.d.now().getTime();
    if ((this.known.get(scope.tenantId) ?? 0) >= now + FEED_KEPT_MS) return;
    const until = now + FEED_KEPT_MS + PRUNE_MARGIN_MS;
    await this.d.store.extend(scope, new Date(until));
    this.known.set(scope.tenantId, Math.max(until, this.known.get(scope.tenantId) ?? 0));
  }
}

export interface FeedRead {
  changes: FeedEntry[];
  /** Where the next read goes on from: past the changes the filters left out too. */
  cursor: string;
  /** The cursor was older than the feed keeps: the changes start at now. */
  reset: boolean;
}

/** Readers waiting for a tenant's next change, woken when any replica writes one or the service stops. */
export class FeedWaiters {
  private readonly waiting = new Map<string, Set<() => void>>();
  private stopped = false;

  /** Waits up to `ms` for the tenant's next change; begun before reading, it misses no change written meanwhile. */
  wait(tenantId: string, ms: number): { done: Promise<void>; cancel: () => void } {
    let finish = () => undefined as void;
    const done = new Promise<void>((resolve) => (finish = resolve));
    if (this.stopped) return { done: Promise.resolve(), cancel: () => undefined };
    const set = this.waiting.get(tenantId) ?? new Set();
    this.waiting.set(tenantId, set);
    const timer = setTimeout(() => end(), ms);
    const end = () => {
      clearTimeout(timer);
      set.delete(end);
      if (set.size === 0 && this.waiting.get(tenantId) === set) this.waiting.delete(tenantId);
      finish();
    };
    set.add(end);
    return { done, cancel: end };
  }

  wake(tenantId: string): void {
    for (const end of [...(this.waiting.get(tenantId) ?? [])]) end();
  }

  /** Every wait ends now and none begins again: readers answer what they have. */
  stop(): void {
    this.stopped = true;
    for (const set of [...this.waiting.values()]) for (const end of [...set]) end();
  }

  get isStopped(): boolean {
    return this.stopped;
  }
}

/** Each tenant's call changes behind `GET /calls/stream`: written by its partition's owner, read by long polls. */
export class CallFeed {
  constructor(
    private readonly d: {
      store: CallFeedStore;
      followers: FeedFollowers;
      waiters: FeedWaiters;
      now: () => Date;
      log: Logger;
    },
  ) {}

  /** Writes a change announced on the feed's topic; a redelivered one is in the feed already. */
  async record(
    scope: TenantScope,
    change: { id: string; change: CallChangeKind; call: FeedEntry['call']; at: Date },
  ): Promise<void> {
    // This replica's readers hear of it now; the others through the feed's change stream.
    if (await this.d.store.append(scope, change)) this.d.waiters.wake(scope.tenantId);
  }

  /** Deletes the changes older than the feed keeps (a bounded batch; `more` when there may be others). */
  async prune(batch: number): Promise<'more' | 'done'> {
    const pruned = await this.d.store.prune(new Date(this.d.now().getTime() - FEED_KEPT_MS - PRUNE_MARGIN_MS), batch);
    return pruned === batch ? 'more' : 'done';
  }

  /** Changes after `after` (none: from now), up to `limit`, or none after `waitMs`; never past a gap being written. */
  async read(
    scope: TenantScope,
    after: string | undefined,
    filter: FeedFilter,
    limit: number,
    waitMs: number,
  ): Promise<FeedRead> {
    // Marked before the starting place is taken: every change after it is written.
    await this.d.followers.reading(scope);
    const now = this.d.now().getTime();
    let from: FeedCursor;
    let reset = false;
    if (after === undefined) from = { seq: await this.d.store.lastWritten(scope), atMs: now };
    else {
      const cursor = parseCursor(after);
      if (!cursor || cursor.atMs > now + FUTURE_SKEW_MS) throw notACursor();
      if (cursor.atMs < now - FEED_KEPT_MS) {
        reset = true;
        from = { seq: await this.d.store.lastWritten(scope), atMs: now };
      } else {
        if (cursor.seq > (await this.d.store.lastWritten(scope))) throw notACursor();
        from = cursor;
      }
    }
    const until = Date.now() + waitMs;
    let gapSince: number | undefined;
    for (;;) {
      const wait = this.d.waiters.wait(scope.tenantId, Math.max(0, until - Date.now()));
      const entries = await this.d.store.after(scope, from.seq, limit);
      const run: FeedEntry[] = [];
      for (const e of entries) {
        if (e.seq !== from.seq + run.length + 1) break;
        run.push(e);
      }
      if (run.length > 0) {
        wait.cancel();
        const last = run.at(-1)!;
        return {
          changes: run.filter((e) => passes(e, filter)),
          cursor: formatCursor({ seq: last.seq, atMs: last.at.getTime() }),
          reset,
        };
      }
      if (entries.length > 0) {
        // A later change is there and this one is not: this read overtook its write, so a later read finds it.
        // Only a change pruned away stays missing; the stream then goes on past it.
        gapSince ??= Date.now();
        if (Date.now() >= until) {
          wait.cancel();
          return { changes: [], cursor: formatCursor(from), reset };
        }
        if (Date.now() - gapSince > GAP_GIVE_UP_MS) {
          this.d.log.warn(
            { tenantId: scope.tenantId, missing: from.seq + 1, next: entries[0]!.seq },
            'a call feed change never arrived; the stream goes on past it',
          );
          from = { seq: entries[0]!.seq - 1, atMs: from.atMs };
          wait.cancel();
          continue;
        }
        await Promise.race([wait.done, new Promise((r) => setTimeout(r, 50))]);
        wait.cancel();
        continue;
      }
      if (Date.now() >= until || this.d.waiters.isStopped) {
        wait.cancel();
        return { changes: [], cursor: formatCursor(from), reset };
      }
      await wait.done;
    }
  }
}

const notACursor = () =>
  validationError('Last-Event-ID is not a cursor this stream gave', [
    { path: 'after', message: 'not a cursor of this stream' },
  ]);
