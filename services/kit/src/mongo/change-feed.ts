import { mongo } from 'mongoose';
import type { Logger } from '../logger';

/** What a change feed watches: a collection (a model's or the driver's) and the kinds of change that matter. */
export interface WakeSource {
  model: { collection: Pick<mongo.Collection, 'watch' | 'collectionName'> };
  operations: readonly ('insert' | 'update' | 'replace' | 'delete')[];
  /**
   * Asked as its changes arrive (the owner may take note of them): whether they call for
   * `onChange` now. Default: they always do.
   */
  wakes?: () => boolean;
  /**
   * Fields of the changed document to carry (an insert's or a replacement's; an update's only with
   * `fullDocument` lookups, so not asked for here): each change's are handed to `seen` before
   * `wakes`. For an owner that wakes only what a change concerns (the waiters of one tenant).
   */
  fields?: readonly string[];
  seen?: (doc: Record<string, unknown>) => void;
}

/**
 * How long the store holds a change stream's read open when nothing changes: one round trip per
 * this long on an idle collection (a MongoDB replica set and the embedded store both wait it out).
 */
const AWAIT_MS = 30_000;
const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 30_000;

/**
 * Calls `onChange` when a watched collection changes: a MongoDB change stream per source, so work
 * is found when it is written, by any replica, instead of by polling. Only the fact of a change
 * is used (no resume token): a stream that fails is opened again after a pause (1 s, doubling to
 * 30 s), and the caller's own timer covers what changed in between.
 *
 * With `paceMs`, a stream reads again no sooner than `paceMs` after a change was reported: the
 * changes of that time arrive as one (one read for the burst, not one per change), which suits a
 * caller that gathers a burst for that long anyway (a worker's `gatherMs`).
 */
export class ChangeFeed {
  private readonly streams = new Map<WakeSource, mongo.ChangeStream>();
  private readonly retries = new Map<WakeSource, NodeJS.Timeout>();
  private readonly pauses = new Set<{ timer: NodeJS.Timeout; done: () => void }>();
  private stopped = false;

  constructor(
    private readonly sources: readonly WakeSource[],
    private readonly onChange: () => void,
    private readonly log: Logger,
    private readonly paceMs = 0,
    /** How long the store holds a read open (shorter only in tests: it must be below the connection's `timeoutMS`). */
    private readonly awaitMs = AWAIT_MS,
  ) {}

  start(): void {
    for (const source of this.sources) this.open(source, RETRY_FIRST_MS);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.retries.values()) clearTimeout(t);
    for (const p of this.pauses) {
      clearTimeout(p.timer);
      p.done();
    }
    await Promise.all([...this.streams.values()].map((s) => s.close().catch((err: unknown) => this.log.debug({ err }, 'change stream did not close on stop'))));
    this.streams.clear();
  }

  private open(source: WakeSource, retryMs: number): void {
    if (this.stopped) return;
    const collection = source.model.collection;
    let stream: mongo.ChangeStream;
    try {
      // Only the kind of change travels: the documents themselves stay on the store (a burst of
      // inserts would otherwise be sent back to every watcher in full).
      const carried = Object.fromEntries((source.fields ?? []).map((f) => [`fullDocument.${f}`, 1]));
      stream = collection.watch([{ $match: { operationType: { $in: [...source.operations] } } }, { $project: { operationType: 1, ...carried } }], { maxAwaitTimeMS: this.awaitMs });
    } catch (err) {
      this.retry(source, retryMs, err);
      return;
    }
    this.streams.set(source, stream);
    void this.follow(source, stream, retryMs);
  }

  /** Reads the stream until it fails or the feed stops: one `onChange` per read that brought changes. */
  private async follow(source: WakeSource, stream: mongo.ChangeStream, retryMs: number): Promise<void> {
    let healthy = false;
    try {
      while (!this.stopped) {
        this.take(source, await nextChange(stream));
        // The rest of what that read brought is in memory already: the same wake-up.
        while (!this.stopped && buffered(stream) > 0) this.take(source, await nextChange(stream));
        healthy = true;
        if (this.stopped) return;
        if (source.wakes?.() ?? true) this.onChange();
        if (this.paceMs > 0 && buffered(stream) === 0) await this.pause(this.paceMs);
      }
    } catch (err) {
      if (this.stopped) return;
      this.streams.delete(source);
      void stream.close().catch(() => undefined); // the stream already failed (logged and retried below): closing it is only tidying up
      // A stream that delivered changes failed for a new reason: start the pauses over.
      this.retry(source, healthy ? RETRY_FIRST_MS : retryMs, err);
    }
  }

  /** Hands a change's carried fields to the source's owner. */
  private take(source: WakeSource, change: unknown): void {
    const doc = (change as { fullDocument?: Record<string, unknown> } | null)?.fullDocument;
    if (source.seen && doc) source.seen(doc);
  }

  private pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const pause = {
        timer: setTimeout(() => {
          this.pauses.delete(pause);
          resolve();
        }, ms),
        done: resolve,
      };
      pause.timer.unref();
      this.pauses.add(pause);
    });
  }

  private retry(source: WakeSource, retryMs: number, err: unknown): void {
    if (this.stopped) return;
    this.log.debug({ err, collection: source.model.collection.collectionName, retryMs }, 'change stream failed; opening it again shortly');
    const t = setTimeout(() => {
      this.retries.delete(source);
      // The pause may have hidden a change: the caller looks once the stream is back.
      source.wakes?.();
      this.onChange();
      this.open(source, Math.min(RETRY_MAX_MS, retryMs * 2));
    }, retryMs);
    t.unref();
    this.retries.set(source, t);
  }
}

/**
 * Changes a stream's last read brought that are not yet taken. The driver keeps them on the
 * stream's cursor and does not type it: where that is missing this reads as -1, so the feed never
 * pauses (it then reads as a stream without `paceMs` does) rather than pausing once per change.
 */
function buffered(stream: mongo.ChangeStream): number {
  const cursor = (stream as unknown as { cursor?: { bufferedCount?: () => number } }).cursor;
  return typeof cursor?.bufferedCount === 'function' ? cursor.bufferedCount() : -1;
}

/**
 * The stream's next change. A wait longer than the connection's operation timeout (connect.ts: a
 * minute without a change) ends in a timeout after which the driver has resumed the stream from
 * where it was: nothing changed and nothing is lost, so the wait goes on, on the same stream.
 */
async function nextChange(stream: mongo.ChangeStream): Promise<unknown> {
  for (;;) {
    try {
      return await stream.next();
    } catch (err) {
      if (!(err instanceof mongo.MongoOperationTimeoutError) || stream.closed) throw err;
    }
  }
}
