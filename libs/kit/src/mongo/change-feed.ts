import { mongo } from 'mongoose';
import type { Logger } from '../logger';

/** What a change feed watches: a model's collection (in its database) and the kinds of change that matter. */
export interface WakeSource {
  model: { collection: { collectionName: string }; db: { db?: mongo.Db } };
  operations: readonly ('insert' | 'update' | 'replace' | 'delete')[];
  /** Asked as its changes arrive: whether they call for `onChange` now (default: yes). */
  wakes?: () => boolean;
  /** Fields of an inserted or replaced document, handed to `seen` before `wakes` (to wake only what it concerns). */
  fields?: readonly string[];
  seen?: (doc: Record<string, unknown>) => void;
}

/** How long the store holds a change stream's read open when nothing changes: one round trip per this on idle. */
const AWAIT_MS = 30_000;
const RETRY_FIRST_MS = 1_000;
const RETRY_MAX_MS = 30_000;
/** Feeds started within this long of each other share the stream's first opening. */
const OPEN_GATHER_MS = 20;

/**
 * Calls `onChange` (once per stream read) when a watched collection changes, by any replica. No resume token: after
 * an outage every feed is told once, and the caller's own timer covers the gap. A burst is gathered by the caller (a
 * worker's `gatherMs`). A database's feeds share one stream, as each open stream taxes every write (decision 0127).
 */
export class ChangeFeed {
  private readonly subscriptions: { changes: DatabaseChanges; subscription: Subscription }[] = [];
  private stopped = false;

  constructor(
    private readonly sources: readonly WakeSource[],
    private readonly onChange: () => void,
    private readonly log: Logger,
    /** Shorter only in tests; must stay below the connection's `timeoutMS`. */
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
  /** This subscription's changes of one stream read, with their carried fields. */
  changed: (docs: Record<string, unknown>[]) => void;
  /** The stream was away or reopened: changes may have gone untold. */
  missed: () => void;
}

/**
 * A database's one change stream in this process, watching what its feeds watch together: reopened with a new
 * feed's collection added, closed when the last feed leaves.
 */
class DatabaseChanges {
  private static readonly byDb = new WeakMap<mongo.Db, DatabaseChanges>();

  static of(db: mongo.Db, log: Logger): DatabaseChanges {
    let changes = DatabaseChanges.byDb.get(db);
    if (!changes) DatabaseChanges.byDb.set(db, (changes = new DatabaseChanges(db, log)));
    return changes;
  }

  private readonly subscriptions = new Set<Subscription>();
  /** Subscriptions an open stream has served: they may miss changes while it reopens. */
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
    // The others keep the stream as it is: a process stopping its feeds must not open streams on the way out.
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
    // Only the kind, place and asked-for fields travel: a burst of inserts would otherwise come back in full.
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

  /** Reads the stream until it fails or is closed, telling each feed its changes once per read. */
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
      void stream.close().catch(() => undefined); // already failed and retried below: closing is tidying up
      this.failed(err);
    }
  }

  private tell(batch: ChangeDoc[]): void {
    for (const s of this.subscriptions) {
      const mine = batch.filter((c) => c.ns?.coll === s.collection && s.operations.includes(c.operationType ?? ''));
      if (mine.length > 0) s.changed(mine.map((c) => c.fullDocument ?? {}));
    }
  }

  /** Reopens the stream after a backoff (1 s doubling to 30 s); every feed is then told it may have missed changes. */
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

/** The next change. An idle wait past the operation timeout is resumed by the driver, losing nothing: wait on. */
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
