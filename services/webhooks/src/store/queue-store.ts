import {
  Coalescer,
  declareQueries,
  insertAsBuilt,
  insertSkippingDuplicates,
  platformModel,
  upsertManyOnce,
  upsertOnce,
  type QueryShape,
  type WakeSource,
} from '@voiceapi/kit';
import { Schema, type Connection, type Model } from 'mongoose';

/**
 * Where every pending delivery is, durably, in one of two small collections:
 *
 * - `delivery_claims`: held in memory by a live replica that will attempt it (just fanned out,
 *   or a retry due soon). Written and deleted by `_id`; read by owner only when that owner is
 *   found dead, so a burst of 10,000 held deliveries costs no scan.
 * - `delivery_queue`: held by nobody, with the time it is due (a retry due later than a replica
 *   keeps in memory, what a stopped or dead replica held, a recovery). The sweeper (one replica,
 *   under a lease) scans this one for what is due and claims it.
 *
 * A delivery moves from one to the other by an insert then a delete, so a crash in between leaves
 * it in both (attempted at least once more, same id), never in neither.
 */
interface QueueDoc {
  _id: string;
  endpointId: string;
  dueAt: Date;
}
interface ClaimDoc {
  _id: string;
  endpointId: string;
  owner: string;
}
/** Replicas that hold deliveries say they are alive; a silent one's claims go back to the queue. */
interface DispatcherDoc {
  _id: string;
  aliveUntil: Date;
}

export const queueSchema = new Schema<QueueDoc>(
  { _id: String, endpointId: { type: String, required: true }, dueAt: { type: Date, required: true } },
  { collection: 'delivery_queue', versionKey: false },
);
queueSchema.index({ dueAt: 1 });
export const claimSchema = new Schema<ClaimDoc>(
  { _id: String, endpointId: { type: String, required: true }, owner: { type: String, required: true } },
  { collection: 'delivery_claims', versionKey: false },
);
claimSchema.index({ owner: 1 });
export const dispatcherSchema = new Schema<DispatcherDoc>(
  { _id: String, aliveUntil: { type: Date, required: true } },
  { collection: 'dispatchers', versionKey: false },
);
// Serves `lapsed` (replicas whose heartbeat ran out).
dispatcherSchema.index({ aliveUntil: 1 });
export const dispatcherQueryShapes: QueryShape[] = [{ name: 'lapsed', equality: [], range: ['aliveUntil'] }];

export const queueQueryShapes: QueryShape[] = [
  { name: 'sweep: the earliest deliveries, due or not', equality: [], sort: { dueAt: 1 } },
];
export const claimQueryShapes: QueryShape[] = [{ name: 'a dead or stopping replica’s claims', equality: ['owner'] }];

export interface QueuedDelivery {
  deliveryId: string;
  endpointId: string;
}

/** Queue entries written per round trip by `enqueueMany`. */
const ENQUEUE_BATCH = 1_000;

export class QueueStore {
  private readonly queue: Model<QueueDoc>;
  private readonly claims: Model<ClaimDoc>;
  private readonly dispatchers: Model<DispatcherDoc>;
  /** Claims asked while one insert is under way are inserted together next. */
  private readonly claiming = new Coalescer<ClaimDoc, boolean>(async (docs) => {
    const taken = new Set(await insertSkippingDuplicates(() => insertAsBuilt(this.claims, docs, false)));
    const held =
      taken.size === 0
        ? []
        : await this.claims.find({ _id: { $in: [...taken].map((i) => docs[i]!._id) } }).lean<ClaimDoc[]>();
    const owners = new Map(held.map((c) => [c._id, c.owner]));
    return docs.map((d, i) => !taken.has(i) || owners.get(d._id) === d.owner);
  });

  constructor(conn: Connection) {
    const why = 'the dispatch mechanism: delivery ids, due times and replicas, no tenant data (the deliveries hold it)';
    this.queue = platformModel(
      (conn.models.QueuedDelivery as Model<QueueDoc> | undefined) ??
        conn.model<QueueDoc>('QueuedDelivery', queueSchema),
      why,
    );
    this.claims = platformModel(
      (conn.models.DeliveryClaim as Model<ClaimDoc> | undefined) ?? conn.model<ClaimDoc>('DeliveryClaim', claimSchema),
      why,
    );
    declareQueries(this.queue, queueQueryShapes);
    declareQueries(this.claims, claimQueryShapes);
    this.dispatchers = platformModel(
      (conn.models.Dispatcher as Model<DispatcherDoc> | undefined) ??
        conn.model<DispatcherDoc>('Dispatcher', dispatcherSchema),
      why,
    );
    declareQueries(this.dispatchers, dispatcherQueryShapes);
  }

  /**
   * This replica holds the delivery: true when the claim is its own (made now, or already its
   * own). An insert against a unique `_id` is atomic on every store: of two replicas claiming the
   * same delivery, one wins.
   */
  claim(item: QueuedDelivery, owner: string): Promise<boolean> {
    return this.claiming.run({ _id: item.deliveryId, endpointId: item.endpointId, owner });
  }

  /** Nobody holds it; due at `dueAt` (a repeat moves the time). */
  async enqueue(item: QueuedDelivery, dueAt: Date): Promise<void> {
    await upsertOnce(this.queue, { _id: item.deliveryId }, { $set: { endpointId: item.endpointId, dueAt } });
  }

  /**
   * Several deliveries queued, each due at its time, written in the order given (ordered, in
   * batches): a sweep that runs meanwhile sees a prefix of them, never a later one without the
   * earlier ones.
   */
  async enqueueMany(items: readonly { item: QueuedDelivery; dueAt: Date }[]): Promise<void> {
    for (let i = 0; i < items.length; i += ENQUEUE_BATCH) {
      const upserts = items.slice(i, i + ENQUEUE_BATCH).map(({ item, dueAt }) => ({
        filter: { _id: item.deliveryId },
        update: { $set: { endpointId: item.endpointId, dueAt } },
      }));
      await upsertManyOnce(this.queue, upserts, { ordered: true });
    }
  }

  /** From claimed to queued (a retry due later than a replica keeps in memory). */
  async release(item: QueuedDelivery, dueAt: Date): Promise<void> {
    await this.enqueue(item, dueAt);
    await this.claims.deleteOne({ _id: item.deliveryId });
  }

  /** From queued to claimed (the sweeper takes it); false when another replica holds it. */
  async take(item: QueuedDelivery, owner: string): Promise<boolean> {
    const won = await this.claim(item, owner);
    await this.queue.deleteOne({ _id: item.deliveryId });
    return won;
  }

  /**
   * Deliveries that ended lose their claims, many in one delete (one round trip for many). A
   * queue entry is left: a recovery may have queued the delivery again meanwhile; the sweeper
   * takes the entry, and the attempt finds the delivery ended, or pending again and sends it.
   */
  async unclaimMany(deliveryIds: readonly string[]): Promise<void> {
    if (deliveryIds.length === 0) return;
    await this.claims.deleteMany({ _id: { $in: [...deliveryIds] } });
  }

  /**
   * Due deliveries nobody holds, oldest first, and when the next one falls due: one read of the
   * earliest `limit + 1` entries, due or not.
   */
  async due(now: Date, limit: number): Promise<{ items: QueuedDelivery[]; nextDueAt?: Date }> {
    const docs = await this.queue
      .find({})
      .sort({ dueAt: 1 })
      .limit(limit + 1)
      .lean<QueueDoc[]>();
    const items = docs
      .filter((d) => d.dueAt.getTime() <= now.getTime())
      .slice(0, limit)
      .map((d) => ({ deliveryId: d._id, endpointId: d.endpointId }));
    const next = docs.find((d) => d.dueAt.getTime() > now.getTime());
    return { items, ...(next && { nextDueAt: next.dueAt }) };
  }

  /** A delivery queued or moved (by any replica): wakes the sweeper. */
  changes(): WakeSource {
    return { model: this.queue, operations: ['insert', 'update'] };
  }

  /** Everything `owner` held goes back to the queue, due now (a replica stopping, or found dead). */
  async releaseAll(owner: string, now: Date): Promise<number> {
    const held = await this.claims.find({ owner }).lean<ClaimDoc[]>();
    for (const c of held) await this.release({ deliveryId: c._id, endpointId: c.endpointId }, now);
    return held.length;
  }

  async heartbeat(owner: string, aliveUntil: Date): Promise<void> {
    await this.dispatchers.updateOne({ _id: owner }, { $set: { aliveUntil } }, { upsert: true });
  }

  /** Replicas whose heartbeat lapsed. */
  async deadOwners(now: Date): Promise<string[]> {
    return (await this.dispatchers.find({ aliveUntil: { $lte: now } }).lean<DispatcherDoc[]>()).map((d) => d._id);
  }

  async retire(owner: string): Promise<void> {
    await this.dispatchers.deleteOne({ _id: owner });
  }
}
