import { Coalescer, stringIds, TenantCollection, type QueryShape, type TenantScope } from '@voiceapi/kit';
import { LRUCache } from 'lru-cache';
import { Schema, type Connection, type Model } from 'mongoose';
import type { Delivery, DeliveryStatus } from '../domain/delivery';

/** A delivery as stored (its `_id` is the public id). */
export type DeliveryDoc = Delivery;

/** One attempt, as the operator reads it. */
export interface AttemptRecord {
  at: Date;
  statusCode?: number;
  error?: string;
  durationMs: number;
}

/** An attempt, inserted once: `_id` is `<deliveryId>:<attempt number>`. */
interface AttemptDoc extends AttemptRecord {
  _id: string;
  /** The delivery's tenant (absent on attempts recorded before it was kept). */
  tenantId: string;
  deliveryId: string;
}
const attemptSchema = new Schema<AttemptDoc>(
  {
    _id: String,
    tenantId: String,
    deliveryId: { type: String, required: true },
    at: { type: Date, required: true },
    statusCode: Number,
    error: String,
    durationMs: { type: Number, required: true },
  },
  { collection: 'delivery_attempts', versionKey: false },
);
// The operator's look at one delivery's attempts.
attemptSchema.index({ deliveryId: 1 });

export const deliverySchema = new Schema<DeliveryDoc>(
  {
    _id: String,
    tenantId: { type: String, required: true },
    endpointId: { type: String, required: true },
    messageId: { type: String, required: true },
    type: { type: String, required: true },
    status: { type: String, required: true },
    attempts: { type: Number, required: true },
    step: { type: Number, required: true },
    lastStatusCode: Number,
    lastError: String,
    nextAttemptAt: Date,
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'deliveries', versionKey: false },
);
// An endpoint's deliveries, newest first (the operator's list) and by creation window (recovery).
deliverySchema.index({ endpointId: 1, createdAt: -1 });
deliverySchema.index({ endpointId: 1, status: 1, createdAt: -1 });

export const deliveryQueryShapes: QueryShape[] = [
  { name: 'an endpoint’s deliveries, newest first', equality: ['endpointId'], sort: { createdAt: -1 } },
  {
    name: 'an endpoint’s deliveries in one status, newest first',
    equality: ['endpointId', 'status'],
    sort: { createdAt: -1 },
  },
  { name: 'recovery: an endpoint’s deliveries of a window', equality: ['endpointId'], range: ['createdAt'] },
  {
    name: 'resume: an endpoint’s pending deliveries, page by page',
    equality: ['endpointId', 'status'],
    sort: { createdAt: -1 },
    range: ['createdAt'],
  },
];

export { attemptSchema };
export const attemptQueryShapes: QueryShape[] = [{ name: 'a delivery’s attempts', equality: ['deliveryId'] }];

/** Deliveries inserted by this process and not yet attempted, kept for their first attempt. */
const MAX_FRESH = 10_000;
/** Why an endpoint's deliveries are read across tenants: the endpoint is found first, and its deliveries are its tenant's. */
const ENDPOINT_OWNS = "an endpoint is found first; its deliveries are read by endpoint id, and are its tenant's";

interface Recorded {
  delivery: Pick<DeliveryDoc, '_id' | 'tenantId'>;
  set: Partial<DeliveryDoc>;
  attempt: AttemptRecord | null;
  unset: (keyof DeliveryDoc)[];
}

/**
 * Deliveries and their attempts. Inserts of deliveries fanned out together, and the records of
 * attempts that end together, are written in groups (one write per collection for many), and a
 * delivery just inserted here is not read back for its first attempt.
 */
export class DeliveryStore {
  private readonly deliveries: TenantCollection<DeliveryDoc, string>;
  private readonly attemptLog: TenantCollection<AttemptDoc, string>;
  /** Inserted here and not attempted yet: nobody else attempts a delivery this replica claimed. */
  private readonly fresh = new LRUCache<string, DeliveryDoc>({ max: MAX_FRESH });
  private readonly inserts = new Coalescer<DeliveryDoc, { created: boolean; delivery: DeliveryDoc }>(async (docs) => {
    const fanOut = this.deliveries.crossTenant(
      'the deliveries of events of several tenants are inserted in one write, each with its tenant',
    );
    const repeats = new Set(await fanOut.insertManyUnordered(docs));
    const existing =
      repeats.size === 0 ? [] : await fanOut.find({ _id: { $in: [...repeats].map((i) => docs[i]!._id) } });
    const byId = new Map(existing.map((d) => [d._id, d]));
    return docs.map((doc, i) => {
      if (!repeats.has(i)) return { created: true, delivery: doc };
      const found = byId.get(doc._id);
      // The same delivery twice in one batch: the first was inserted now.
      const first = docs.find((d) => d._id === doc._id);
      if (found && found.tenantId === doc.tenantId) return { created: false, delivery: found };
      if (first && first !== doc) return { created: false, delivery: first };
      throw new Error(`delivery ${doc._id} exists under another tenant`);
    });
  });
  private readonly records = new Coalescer<Recorded, void>(async (batch) => {
    const attempts = batch.flatMap(({ delivery, set, attempt }) =>
      attempt && set.attempts !== undefined
        ? [
            {
              _id: `${delivery._id}:${set.attempts}`,
              tenantId: delivery.tenantId,
              deliveryId: delivery._id,
              ...attempt,
            },
          ]
        : [],
    );
    // Attempts first: a delivery never says it was attempted more often than its log shows.
    await this.attemptLog
      .crossTenant('the attempts of deliveries to several tenants are logged in one write')
      .insertManyUnordered(attempts);
    await this.deliveries
      .crossTenant('the attempts of deliveries to several tenants are recorded in one write, each under its tenant')
      .updateManyById(
        batch.map(({ delivery, set, unset }) => ({
          id: delivery._id,
          tenantId: delivery.tenantId,
          update: { $set: set, ...(unset.length > 0 && { $unset: Object.fromEntries(unset.map((k) => [k, 1])) }) },
        })),
      );
    return batch.map(() => undefined);
  });

  constructor(conn: Connection) {
    this.deliveries = new TenantCollection(
      (conn.models.Delivery as Model<DeliveryDoc> | undefined) ?? conn.model<DeliveryDoc>('Delivery', deliverySchema),
      stringIds,
      deliveryQueryShapes,
    );
    this.attemptLog = new TenantCollection(
      (conn.models.DeliveryAttempt as Model<AttemptDoc> | undefined) ??
        conn.model<AttemptDoc>('DeliveryAttempt', attemptSchema),
      stringIds,
      attemptQueryShapes,
    );
  }

  /** Inserts the delivery, or answers the one a previous fan-out of the same message made. */
  async insertOnce(
    scope: TenantScope,
    doc: Omit<DeliveryDoc, 'tenantId'>,
  ): Promise<{ created: boolean; delivery: DeliveryDoc }> {
    const result = await this.inserts.run({ ...doc, tenantId: scope.tenantId });
    if (result.created && result.delivery.status === 'pending') {
      this.fresh.set(doc._id, result.delivery); // past MAX_FRESH, the oldest is forgotten (read from the store when attempted)
    }
    return result;
  }

  /** The delivery; one inserted here and not attempted yet is answered from memory, once. */
  async get(id: string): Promise<DeliveryDoc | null> {
    const fresh = this.fresh.get(id);
    if (fresh) {
      this.fresh.delete(id);
      return fresh;
    }
    return this.deliveries.crossTenant('the dispatcher and the operator act on a delivery by its id').findById(id);
  }

  /**
   * Records an attempt (inserted, number `attempts` of the delivery) and the delivery's new state;
   * the records of attempts ending together are written together.
   */
  async record(
    delivery: Pick<DeliveryDoc, '_id' | 'tenantId'>,
    set: Partial<DeliveryDoc>,
    attempt: AttemptRecord | null,
    unset: (keyof DeliveryDoc)[] = [],
  ): Promise<void> {
    this.fresh.delete(delivery._id);
    await this.records.run({ delivery, set, attempt, unset });
  }

  /** A delivery's attempts, oldest first. */
  async attempts(id: string): Promise<AttemptRecord[]> {
    const docs = await this.attemptLog
      .crossTenant("the operator reads any delivery's attempts")
      .find({ deliveryId: id });
    return docs
      .sort((a, b) => a.at.getTime() - b.at.getTime())
      .map(({ at, statusCode, error, durationMs }) => ({
        at,
        durationMs,
        ...(statusCode !== undefined && { statusCode }),
        ...(error !== undefined && { error }),
      }));
  }

  list(endpointId: string, limit: number, status?: DeliveryStatus): Promise<DeliveryDoc[]> {
    return this.deliveries
      .crossTenant(ENDPOINT_OWNS)
      .find({ endpointId, ...(status && { status }) }, { sort: { createdAt: -1 }, limit });
  }

  /** Deliveries of the window that did not succeed (pending ones included: they are queued already). */
  notSucceeded(endpointId: string, since: Date, until: Date): Promise<DeliveryDoc[]> {
    return this.deliveries
      .crossTenant(ENDPOINT_OWNS)
      .find({ endpointId, createdAt: { $gte: since, $lt: until }, status: { $ne: 'succeeded' } }, {});
  }

  /** An endpoint's pending deliveries, newest first, a page at a time. */
  async *pending(endpointId: string, pageSize = 1_000): AsyncGenerator<DeliveryDoc[]> {
    let before: Date | undefined;
    let boundary = new Set<string>();
    for (;;) {
      const page = await this.deliveries
        .crossTenant(ENDPOINT_OWNS)
        .find(
          { endpointId, status: 'pending', ...(before && { createdAt: { $lte: before } }) },
          { sort: { createdAt: -1 }, limit: pageSize },
        );
      const fresh = page.filter((d) => !boundary.has(d._id));
      if (fresh.length === 0) return;
      yield fresh;
      before = page.at(-1)!.createdAt;
      // Deliveries of the same instant as the page's last are read again: skip the ones seen.
      boundary = new Set(page.filter((d) => d.createdAt.getTime() === before!.getTime()).map((d) => d._id));
    }
  }
}
