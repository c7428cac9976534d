import { isDuplicateKeyError, stringIds, TenantCollection, type QueryShape, type TenantScope } from '@voiceapi/kit';
import { Schema, type Connection } from 'mongoose';

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/** One attempt, as the operator reads it. */
export interface AttemptRecord {
  at: Date;
  statusCode?: number;
  error?: string;
  durationMs: number;
}

/**
 * One message to one endpoint, with its body: the same bytes on every attempt and after a
 * recovery. The history (succeeded and failed deliveries) lives here; what is still to be sent is
 * also in the small `delivery_queue`.
 */
export interface DeliveryDoc {
  _id: string;
  tenantId: string;
  endpointId: string;
  messageId: string;
  type: string;
  body: string;
  status: DeliveryStatus;
  /** Attempts made, ever. */
  attempts: number;
  /** Attempts made in this round (a recovery starts a new round on the schedule). */
  step: number;
  lastStatusCode?: number;
  lastError?: string;
  nextAttemptAt?: Date;
  /** The latest attempts, newest last (at most `ATTEMPTS_KEPT`). */
  log: AttemptRecord[];
  createdAt: Date;
  updatedAt: Date;
}

export const ATTEMPTS_KEPT = 10;

const attemptSchema = new Schema<AttemptRecord>({ at: { type: Date, required: true }, statusCode: Number, error: String, durationMs: { type: Number, required: true } }, { _id: false });

export const deliverySchema = new Schema<DeliveryDoc>(
  {
    _id: String,
    tenantId: { type: String, required: true },
    endpointId: { type: String, required: true },
    messageId: { type: String, required: true },
    type: { type: String, required: true },
    body: { type: String, required: true },
    status: { type: String, required: true },
    attempts: { type: Number, required: true },
    step: { type: Number, required: true },
    lastStatusCode: Number,
    lastError: String,
    nextAttemptAt: Date,
    log: { type: [attemptSchema], default: [] },
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
];

export class DeliveryStore {
  private readonly deliveries: TenantCollection<DeliveryDoc, string>;

  constructor(conn: Connection) {
    this.deliveries = new TenantCollection(conn.models.Delivery ?? conn.model<DeliveryDoc>('Delivery', deliverySchema), stringIds, deliveryQueryShapes);
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

  /** Records an attempt; `where` keeps a stale writer from overwriting a newer state. */
  record(id: string, set: Partial<DeliveryDoc>, attempt: AttemptRecord | null, unset: (keyof DeliveryDoc)[] = [], where?: Record<string, unknown>): Promise<DeliveryDoc | null> {
    return this.any().updateById(
      id,
      {
        $set: set,
        ...(attempt && { $push: { log: { $each: [attempt], $slice: -ATTEMPTS_KEPT } } }),
        ...(unset.length > 0 && { $unset: Object.fromEntries(unset.map((k) => [k, 1])) }),
      },
      where ? { where } : {},
    );
  }

  list(endpointId: string, limit: number, status?: DeliveryStatus): Promise<DeliveryDoc[]> {
    return this.any().find({ endpointId, ...(status && { status }) }, { sort: { createdAt: -1 }, limit });
  }

  /** Deliveries of the window that did not succeed (pending ones included: they are queued already). */
  notSucceeded(endpointId: string, since: Date, until: Date): Promise<DeliveryDoc[]> {
    return this.any().find({ endpointId, createdAt: { $gte: since, $lt: until }, status: { $ne: 'succeeded' } }, {});
  }

  private any() {
    return this.deliveries.crossTenant('the dispatcher and the operator act on deliveries by id and by endpoint');
  }
}
