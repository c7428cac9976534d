import { mongo } from 'mongoose';
import type { Logger } from '../logger';

/** What a change feed watches: a model's collection (in its database) and the kinds of change that matter. */
export interface WakeSource {
  model: { collection: { collectionName: string }; db: { db?: mongo.Db } };
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
 * this long on an idle database (a MongoDB replica set and the embedded store both wait it out).
 */
const AWAIT_MS = 30_000;
const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 30_000;
/** Feeds started within this long of each other share the stream's first opening (a process starts its workers together). */
const OPEN_GATHER_MS = 20;

/**
 * Calls `onChange` when a watched collection changes, by any replica, so work is found when it is
 * written instead of by polling. Only the fact of a change is used (no resume token): after the
 * stream was away, every feed is told once, and the caller's own timer covers what changed in
 * between.
 *
 * Every feed of a database shares one change stream on it (`DatabaseChanges`): the store works
 * through each write once per open stream, whatever the stream watches, so streams cost every
 * write of the whole store (test/bench/store-cost.ts: 18 streams tripled its CPU per write). One
 * per process instead of one per watched collection.
 * `onChange` is called once per read of the stream that brought the feed's changes; a caller that
 * serves a burst with one pass gathers them itself (a worker's `gatherMs`).
 */
export class ChangeFeed {
  private readonly subscriptions: { changes: DatabaseChanges; subscription: Subscription }[] = [];
  private stopped = false;

  constructor(
    private readonly sources: readonly WakeSource[],
    private readonly onChange: () => void,
    private readonly log: Logger,
    /** How long the store holds a read open (shorter only in tests: it must be below the connection's `timeoutMS`). */
    private readonly awaitMs = AWAIT_MS,
  ) {}

  start(): void {
    for (const source of this.sources) {
      const db = source.model.db.db;
      if (!db) throw new Error(`change feed on ${source.model.collection.collectionName}: the connection is not open`);
      const changes = DatabaseChanges.of(db, this.log);
      const subscription: Subscription = {
        collection: source.model.collection.collectionName,
        operations: source.operations,
        fields: source.fields ?? [],
        awaitMs: this.awaitMs,
        changed: (docs) => {
          if (source.seen) for (const doc of docs) source.seen(doc);
          if ((source.wakes?.() ?? true) && !this.stopped) this.onChange();
        },
        missed: () => {
          source.wakes?.();
          if (!this.stopped) this.onChange();
        },
      };
      changes.subscribe(subscription);
      this.subscriptions.push({ changes, subscription });
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(
      this.subscriptions.splice(0).map(({ changes, subscription }) => changes.unsubscribe(subscription)),
    );
  }
}

/** One feed's interest in one collection of the database. */
interface Subscription {
  collection: string;
  operations: readonly string[];
  fields: readonly string[];
  awaitMs: number;
  /** Changes of this subscription arrived (one call per read of the stream), with their carried fields. */
  changed: (docs: Record<string, unknown>[]) => void;
  /** The stream was away or reopened: changes may have gone untold. */
  missed: () => void;
}

/**
 * The one change stream of a database in this process, for every feed that watches a collection of
 * it: it watches what they watch together (their collections and kinds of change, the fields they
 * carry) and tells each feed of its own changes, once per read. A feed that subscribes later opens
 * the stream again with its collection added; the last to leave closes it.
 */
class DatabaseChanges {
  private static readonly byDb = new WeakMap<mongo.Db, DatabaseChanges>();

  static of(db: mongo.Db, log: Logger): DatabaseChanges {
    let changes = DatabaseChanges.byDb.get(db);
    if (!changes) DatabaseChanges.byDb.set(db, (changes = new DatabaseChanges(db, log)));
    return changes;
  }

  private readonly subscriptions = new Set<Subscription>();
  /** The subscriptions an open stream has served: they may miss changes while it is opened again. */
  private readonly following = new Set<Subscription>();
  private stream: mongo.ChangeStream | undefined;
  /** The next opening, while feeds that start together are gathered or a failed stream waits. */
  private opening: NodeJS.Timeout | undefined;
  private retryMs = RETRY_FIRST_MS;
  /** Openings run one after the other: two at once would leave one stream open and unread. */
  private reopening: Promise<void> = Promise.resolve();

  private constructor(
    private readonly db: mongo.Db,
    private readonly log: Logger,
  ) {}

  subscribe(subscription: Subscription): void {
    this.subscriptions.add(subscription);
    this.reopenSoon(OPEN_GATHER_MS);
  }

  async unsubscribe(subscription: Subscription): Promise<void> {
    if (!this.subscriptions.delete(subscription)) return;
    this.following.delete(subscription);
    // The others go on on the stream as it is (it watches a collection more than they need; a
    // process stopping its feeds one by one must not open streams on the way out).
    if (this.subscriptions.size > 0) return;
    if (this.opening) clearTimeout(this.opening);
    this.opening = undefined;
    // After any opening under way (which finds no feed left and opens nothing).
    await this.reopening;
    await this.close();
  }

  private reopenSoon(ms: number): void {
    if (this.opening) return;
    this.opening = setTimeout(() => {
      this.opening = undefined;
      this.reopenInTurn();
    }, ms);
    this.opening.unref();
  }

  private reopenInTurn(): void {
    this.reopening = this.reopening.then(() => this.reopen()).catch((err: unknown) => this.failed(err));
  }

  private async close(): Promise<void> {
    const stream = this.stream;
    this.stream = undefined;
    await stream
      ?.close()
      .catch((err: unknown) => this.log.debug({ err, db: this.db.databaseName }, 'change stream did not close'));
  }

  private async reopen(): Promise<void> {
    await this.close();
    if (this.subscriptions.size === 0) return;
    const subs = [...this.subscriptions];
    const byCollection = new Map<string, Set<string>>();
    for (const s of subs)
      for (const op of s.operations)
        (byCollection.get(s.collection) ?? byCollection.set(s.collection, new Set()).get(s.collection)!).add(op);
    // Only the kind of change, where it happened and the fields asked for travel: the documents
    // themselves stay on the store (a burst of inserts would otherwise come back in full).
    const carried = Object.fromEntries(subs.flatMap((s) => s.fields.map((f) => [`fullDocument.${f}`, 1])));
    const match = {
      $or: [...byCollection].map(([coll, ops]) => ({
        'ns.coll': coll,
        operationType: { $in: [...ops] },
      })),
    };
    let stream: mongo.ChangeStream;
    try {
      stream = this.db.watch([{ $match: match }, { $project: { operationType: 1, ns: 1, ...carried } }], {
        maxAwaitTimeMS: Math.min(...subs.map((s) => s.awaitMs)),
      });
    } catch (err) {
      return this.failed(err);
    }
    this.stream = stream;
    // Feeds that were following may have missed what changed while the stream was away.
    for (const s of subs) {
      if (this.following.has(s)) s.missed();
      this.following.add(s);
    }
    void this.follow(stream);
  }

  /** Reads the stream until it fails or is closed: each read's changes told to their feeds, once per feed. */
  private async follow(stream: mongo.ChangeStream): Promise<void> {
    try {
      while (this.stream === stream) {
        const batch = [await nextChange(stream)];
        // The rest of what that read brought is in memory already: the same telling.
        while (this.stream === stream && buffered(stream) > 0) batch.push(await nextChange(stream));
        if (this.stream !== stream) return;
        this.retryMs = RETRY_FIRST_MS;
        this.tell(batch as ChangeDoc[]);
      }
    } catch (err) {
      if (this.stream !== stream) return;
      this.stream = undefined;
      void stream.close().catch(() => undefined); // the stream already failed (logged and retried below): closing it is only tidying up
      this.failed(err);
    }
  }

  private tell(batch: ChangeDoc[]): void {
    for (const s of this.subscriptions) {
      const mine = batch.filter((c) => c.ns?.coll === s.collection && s.operations.includes(c.operationType ?? ''));
      if (mine.length > 0) s.changed(mine.map((c) => c.fullDocument ?? {}));
    }
  }

  /** Opens the stream again after a pause (1 s, doubling to 30 s); every feed is told then, as it may have missed changes. */
  private failed(err: unknown): void {
    this.log.debug(
      { err, db: this.db.databaseName, retryMs: this.retryMs },
      'change stream failed; opening it again shortly',
    );
    if (this.opening) clearTimeout(this.opening);
    this.opening = setTimeout(() => {
      this.opening = undefined;
      this.reopenInTurn();
    }, this.retryMs);
    this.opening.unref();
    this.retryMs = Math.min(RETRY_MAX_MS, this.retryMs * 2);
  }
}

interface ChangeDoc {
  operationType?: string;
  ns?: { coll?: string };
  fullDocument?: Record<string, unknown>;
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

/** How many changes the stream's last read brought that are not taken yet (-1: unknown). */
function buffered(stream: mongo.ChangeStream): number {
  const cursor = (stream as unknown as { cursor?: { bufferedCount?: () => number } }).cursor;
  return typeof cursor?.bufferedCount === 'function' ? cursor.bufferedCount() : -1;
}
