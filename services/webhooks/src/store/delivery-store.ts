import { isDuplicateKeyError, scopeOfRecord, stringIds, TenantCollection, type QueryShape, type TenantScope } from '@voiceapi/kit';
import { Schema, type Connection } from 'mongoose';
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
  { _id: String, tenantId: String, deliveryId: { type: String, required: true }, at: { type: Date, required: true }, statusCode: Number, error: String, durationMs: { type: Number, required: true } },
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
  { name: 'an endpoint’s deliveries in one status, newest first', equality: ['endpointId', 'status'], sort: { createdAt: -1 } },
  { name: 'recovery: an endpoint’s deliveries of a window', equality: ['endpointId'], range: ['createdAt'] },
  { name: 'resume: an endpoint’s pending deliveries, page by page', equality: ['endpointId', 'status'], sort: { createdAt: -1 }, range: ['createdAt'] },
];

export { attemptSchema };
export const attemptQueryShapes: QueryShape[] = [{ name: 'a delivery’s attempts', equality: ['deliveryId'] }];

export class DeliveryStore {
  private readonly deliveries: TenantCollection<DeliveryDoc, string>;
  private readonly attemptLog: TenantCollection<AttemptDoc, string>;

  constructor(conn: Connection) {
    this.deliveries = new TenantCollection(conn.models.Delivery ?? conn.model<DeliveryDoc>('Delivery', deliverySchema), stringIds, deliveryQueryShapes);
    this.attemptLog = new TenantCollection(conn.models.DeliveryAttempt ?? conn.model<AttemptDoc>('DeliveryAttempt', attemptSchema), stringIds, attemptQueryShapes);
  }

  /** Inserts the delivery, or answers the one a previous fan-out of the same message made. */
  async insertOnce(scope: TenantScope, doc: Omit<DeliveryDoc, 'tenantId'>): Promise<{ created: boolean; delivery: DeliveryDoc }> {
    try {
      return { created: true, delivery: await this.deliveries.insert(scope, doc) };
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      const existing = await this.deliveries.findById(scope, doc._id);
      if (!existing) throw err;
      return { created: false, delivery: existing };
    }
  }

  get(id: string): Promise<DeliveryDoc | null> {
    return this.any().findById(id);
  }

  /** Records an attempt (inserted, number `attempts` of the delivery) and the delivery's new state. */
  async record(delivery: Pick<DeliveryDoc, '_id' | 'tenantId'>, set: Partial<DeliveryDoc>, attempt: AttemptRecord | null, unset: (keyof DeliveryDoc)[] = []): Promise<void> {
    const scope = scopeOfRecord(delivery.tenantId);
    const id = delivery._id;
    if (attempt && set.attempts !== undefined) {
      await this.attemptLog.insert(scope, { _id: `${id}:${set.attempts}`, deliveryId: id, ...attempt }).catch((err: unknown) => {
        if (!isDuplicateKeyError(err)) throw err;
      });
    }
    await this.deliveries.updateById(scope, id, { $set: set, ...(unset.length > 0 && { $unset: Object.fromEntries(unset.map((k) => [k, 1])) }) });
  }

  /** A delivery's attempts, oldest first. */
  async attempts(id: string): Promise<AttemptRecord[]> {
    const docs = await this.attemptLog.crossTenant('the operator reads any delivery\'s attempts').find({ deliveryId: id });
    return docs.sort((a, b) => a.at.getTime() - b.at.getTime()).map(({ at, statusCode, error, durationMs }) => ({ at, durationMs, ...(statusCode !== undefined && { statusCode }), ...(error !== undefined && { error }) }));
  }

  list(endpointId: string, limit: number, status?: DeliveryStatus): Promise<DeliveryDoc[]> {
    return this.any().find({ endpointId, ...(status && { status }) }, { sort: { createdAt: -1 }, limit });
  }

  /** Deliveries of the window that did not succeed (pending ones included: they are queued already). */
  notSucceeded(endpointId: string, since: Date, until: Date): Promise<DeliveryDoc[]> {
    return this.any().find({ endpointId, createdAt: { $gte: since, $lt: until }, status: { $ne: 'succeeded' } }, {});
  }

  /** An endpoint's pending deliveries, newest first, a page at a time. */
  async *pending(endpointId: string, pageSize = 1_000): AsyncGenerator<DeliveryDoc[]> {
    let before: Date | undefined;
    let boundary = new Set<string>();
    for (;;) {
      const page = await this.any().find({ endpointId, status: 'pending', ...(before && { createdAt: { $lte: before } }) }, { sort: { createdAt: -1 }, limit: pageSize });
      const fresh = page.filter((d) => !boundary.has(d._id));
      if (fresh.length === 0) return;
      yield fresh;
      before = page.at(-1)!.createdAt;
      // Deliveries of the same instant as the page's last are read again: skip the ones seen.
      boundary = new Set(page.filter((d) => d.createdAt.getTime() === before!.getTime()).map((d) => d._id));
    }
  }

  private any() {
    return this.deliveries.crossTenant('the dispatcher and the operator act on deliveries by id and by endpoint');
  }
}
