import { modelOf, stringIds, TenantCollection, type QueryShape } from '@voiceapi/kit/mongo';
import { Coalescer } from '@voiceapi/kit/work';
import { Schema, type Connection } from 'mongoose';
import { MAX_ATTEMPT_LOG, type AttemptRecord, type Delivery, type DeliveryStatus } from '../domain/delivery';

/** Its `_id` is the public id. */
export type DeliveryDoc = Delivery;

const attemptSchema = new Schema<AttemptRecord>(
  {
    at: { type: Date, required: true },
    statusCode: Number,
    error: String,
    durationMs: { type: Number, required: true },
  },
  { _id: false },
);

export const deliverySchema = new Schema<DeliveryDoc>(
  {
    _id: String,
    tenantId: { type: String, required: true },
    endpointId: { type: String, required: true },
    messageId: { type: String, required: true },
    type: { type: String, required: true },
    body: String,
    status: { type: String, required: true },
    attempts: { type: Number, required: true },
    step: { type: Number, required: true },
    attemptLog: { type: [attemptSchema], default: undefined },
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
// The sweep: pending deliveries by when they may be taken, in all and per endpoint.
deliverySchema.index({ status: 1, nextAttemptAt: 1 });
deliverySchema.index({ endpointId: 1, status: 1, nextAttemptAt: 1 });

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
  { name: 'sweep: the endpoints with deliveries due', equality: ['status'], range: ['nextAttemptAt'] },
  {
    name: 'sweep: the next delivery to fall due',
    equality: ['status'],
    range: ['nextAttemptAt'],
    sort: { nextAttemptAt: 1 },
  },
  {
    name: 'refill: an endpoint’s deliveries due, earliest first',
    equality: ['endpointId', 'status'],
    range: ['nextAttemptAt'],
    sort: { nextAttemptAt: 1 },
  },
];

const ENDPOINT_OWNS = "an endpoint is found first; its deliveries are read by endpoint id, and are its tenant's";
const DISPATCH = 'the dispatcher sends and records deliveries of every tenant, each by its id and under its tenant';

export interface DeliveryChange {
  set: Partial<DeliveryDoc>;
  unset?: (keyof DeliveryDoc)[];
}

/** Keeps the latest `MAX_ATTEMPT_LOG`. */
export const withAttempt = (log: readonly AttemptRecord[] | undefined, record: AttemptRecord): AttemptRecord[] =>
  [...(log ?? []), record].slice(-MAX_ATTEMPT_LOG);

/**
 * One document per delivery (decision 0138). Changes are conditional on the writer's hold (`nextAttemptAt`),
 * so of two replicas acting on one delivery only one records.
 */
export class DeliveryStore {
  private readonly deliveries: TenantCollection<DeliveryDoc, string>;
  private readonly lookups = new Coalescer<string, boolean>(async (ids) => {
    const found = await this.deliveries
      .crossTenant('a fan-out looks up the deliveries of the events fanned out together, each under its tenant')
      .find({ _id: { $in: [...new Set(ids)] } }, {});
    const stored = new Set(found.map((d) => d._id));
    return ids.map((id) => stored.has(id));
  });
  private readonly inserts = new Coalescer<DeliveryDoc, boolean>(async (docs) => {
    const repeats = new Set(await this.deliveries.crossTenant(DISPATCH).insertManyUnordered(docs));
    return docs.map((_, i) => !repeats.has(i));
  });

  constructor(private readonly conn: Connection) {
    this.deliveries = new TenantCollection(modelOf(conn, 'Delivery', deliverySchema), stringIds, deliveryQueryShapes);
  }

  /** Stores a new delivery; false when one of that id exists (its message was fanned out before). */
  insert(doc: DeliveryDoc): Promise<boolean> {
    return this.inserts.run(doc);
  }

  /** Applies only while `heldUntil` is its `nextAttemptAt`: false when another replica took it, or it ended. */
  async change(delivery: Pick<DeliveryDoc, '_id' | 'tenantId'>, heldUntil: Date, c: DeliveryChange): Promise<boolean> {
    const unset = c.unset ?? [];
    const updated = await this.deliveries
      .crossTenant(DISPATCH)
      .updateById(
        delivery._id,
        { $set: c.set, ...(unset.length > 0 && { $unset: Object.fromEntries(unset.map((k) => [k, 1])) }) },
        { where: { tenantId: delivery.tenantId, status: 'pending', nextAttemptAt: heldUntil } },
      );
    return updated !== null;
  }

  /** Takes a due delivery until `until`; false when another replica took it first (or it changed). */
  take(delivery: Pick<DeliveryDoc, '_id' | 'tenantId'>, seenAt: Date, until: Date): Promise<boolean> {
    return this.change(delivery, seenAt, { set: { nextAttemptAt: until } });
  }

  dueEndpoints(now: Date): Promise<string[]> {
    return this.deliveries
      .crossTenant('the sweep reads the pending deliveries of every tenant by when they are due')
      .distinct('endpointId', { status: 'pending', nextAttemptAt: { $lte: now } });
  }

  /** An idle sweep's one read (docs/performance.md "An idle system"). */
  async earliestDueAt(): Promise<Date | undefined> {
    const [next] = await this.deliveries
      .crossTenant('the sweep reads the pending deliveries of every tenant by when they are due')
      .find({ status: 'pending' }, { sort: { nextAttemptAt: 1 }, limit: 1 });
    return next?.nextAttemptAt;
  }

  async nextDueAt(now: Date): Promise<Date | undefined> {
    const [next] = await this.deliveries
      .crossTenant('the sweep reads the pending deliveries of every tenant by when they are due')
      .find({ status: 'pending', nextAttemptAt: { $gt: now } }, { sort: { nextAttemptAt: 1 }, limit: 1 });
    return next?.nextAttemptAt;
  }

  due(endpointId: string, now: Date, limit: number): Promise<DeliveryDoc[]> {
    return this.deliveries
      .crossTenant(ENDPOINT_OWNS)
      .find({ endpointId, status: 'pending', nextAttemptAt: { $lte: now } }, { sort: { nextAttemptAt: 1 }, limit });
  }

  /** Of these ids, those stored already (a message fanned out again); concurrent asks share one read. */
  async stored(ids: readonly string[]): Promise<Set<string>> {
    const found = await Promise.all(ids.map((id) => this.lookups.run(id)));
    return new Set(ids.filter((_, i) => found[i]));
  }

  /** A resume: each due at its creation, so they go out oldest first. */
  async dueAt(items: readonly { delivery: Pick<DeliveryDoc, '_id' | 'tenantId'>; at: Date }[]): Promise<void> {
    await this.deliveries.crossTenant(ENDPOINT_OWNS).updateManyById(
      items.map(({ delivery, at }) => ({
        id: delivery._id,
        tenantId: delivery.tenantId,
        where: { status: 'pending' },
        update: { $set: { nextAttemptAt: at } },
      })),
    );
  }

  /** A recovery: the schedule starts again, due now (pending ones too). */
  async restart(delivery: Pick<DeliveryDoc, '_id' | 'tenantId'>, now: Date): Promise<void> {
    await this.deliveries
      .crossTenant(ENDPOINT_OWNS)
      .updateById(
        delivery._id,
        { $set: { status: 'pending', step: 0, nextAttemptAt: now, updatedAt: now } },
        { where: { tenantId: delivery.tenantId } },
      );
  }

  /** The body of a delivery stored before 1.3, from the `messages` collection those versions wrote. */
  async legacyBody(messageId: string): Promise<string | null> {
    const doc = await this.conn.collection<{ _id: string; body: string }>('messages').findOne({ _id: messageId });
    return doc?.body ?? null;
  }

  get(id: string): Promise<DeliveryDoc | null> {
    return this.deliveries.crossTenant('the operator reads a delivery by its id').findById(id);
  }

  async attempts(id: string): Promise<AttemptRecord[]> {
    return (await this.get(id))?.attemptLog ?? [];
  }

  list(endpointId: string, limit: number, status?: DeliveryStatus): Promise<DeliveryDoc[]> {
    return this.deliveries
      .crossTenant(ENDPOINT_OWNS)
      .find({ endpointId, ...(status && { status }) }, { sort: { createdAt: -1 }, limit });
  }

  notSucceeded(endpointId: string, since: Date, until: Date): Promise<DeliveryDoc[]> {
    return this.deliveries
      .crossTenant(ENDPOINT_OWNS)
      .find({ endpointId, createdAt: { $gte: since, $lt: until }, status: { $ne: 'succeeded' } }, {});
  }

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
      // The page's last instant is read again: skip the ones seen.
      boundary = new Set(page.filter((d) => d.createdAt.getTime() === before!.getTime()).map((d) => d._id));
    }
  }
}
