import { modelOf, stringIds, TenantCollection, type QueryShape, type TenantScope } from '@voiceapi/kit';
import { LRUCache } from 'lru-cache';
import { randomBytes } from 'node:crypto';
import { Schema, type Connection } from 'mongoose';

/** A signing secret, sealed (the kit's SecretBox); a rotated-out one signs beside the new one until `retiresAt`. */
export interface SealedSecret {
  sealed: string;
  createdAt: Date;
  retiresAt?: Date;
}

/** `paused` by the operator (deliveries wait), `disabled` by failures, `deleted` by the operator (kept for its delivery log). */
export type EndpointStatus = 'enabled' | 'paused' | 'disabled' | 'deleted';
export type DisabledReason = 'gone' | 'failing';

export interface EndpointDoc {
  _id: string;
  tenantId: string;
  url: string;
  /** Subscribed types; empty means every type (including types added later). */
  events: string[];
  status: EndpointStatus;
  disabledReason?: DisabledReason;
  /** Newest first. */
  secrets: SealedSecret[];
  /** The first failure since the last success; unset while the endpoint succeeds. */
  failingSince?: Date;
  deletedAt?: Date;
  createdAt: Date;
  updatedAt: Date;
}

const secretSchema = new Schema<SealedSecret>(
  { sealed: { type: String, required: true }, createdAt: { type: Date, required: true }, retiresAt: Date },
  { _id: false },
);

export const endpointSchema = new Schema<EndpointDoc>(
  {
    _id: String,
    tenantId: { type: String, required: true },
    url: { type: String, required: true },
    events: { type: [String], default: [] },
    status: { type: String, required: true },
    disabledReason: String,
    secrets: { type: [secretSchema], default: [] },
    failingSince: Date,
    deletedAt: Date,
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'endpoints', versionKey: false },
);
// A tenant's endpoints: the operator's list and each event's fan-out.
endpointSchema.index({ tenantId: 1, createdAt: 1 });

export const endpointQueryShapes: QueryShape[] = [
  { name: 'list and fan-out', equality: ['tenantId'], sort: { createdAt: 1 } },
];

export const newEndpointId = (): string => `ep_${randomBytes(12).toString('base64url')}`;

/** Endpoints: few per tenant, so a tenant's list is small even where it is scanned. */
export class EndpointStore {
  private readonly endpoints: TenantCollection<EndpointDoc, string>;
  /**
   * A tenant's endpoints, read on every event's fan-out: kept `cacheTtlMs` (another replica's
   * change is seen within it), emptied at once by this process's own changes. No change stream.
   */
  private readonly cache: LRUCache<string, EndpointDoc[], TenantScope>;

  constructor(conn: Connection, opts: { cacheTtlMs: number }) {
    this.endpoints = new TenantCollection(modelOf(conn, 'Endpoint', endpointSchema), stringIds, endpointQueryShapes);
    // A read under way when this process changes an endpoint is dropped, not kept (lru-cache aborts it on `clear`).
    this.cache = new LRUCache({
      max: 10_000,
      ttl: opts.cacheTtlMs,
      fetchMethod: (_tenantId, _stale, { context }) => this.endpoints.find(context, {}, { sort: { createdAt: 1 } }),
    });
  }

  /** Every endpoint of every tenant, a page at a time (the key rotation's pass). */
  all(): AsyncGenerator<EndpointDoc[]> {
    return this.endpoints.crossTenant('the key rotation re-seals the secrets of every tenant').pages();
  }

  async insert(scope: TenantScope, doc: Omit<EndpointDoc, 'tenantId'>): Promise<EndpointDoc> {
    const inserted = await this.endpoints.insert(scope, doc);
    this.cache.clear();
    return inserted;
  }

  /** The tenant's endpoints, oldest first (cached: every event's fan-out asks). */
  async list(scope: TenantScope): Promise<EndpointDoc[]> {
    return (await this.cache.fetch(scope.tenantId, { context: scope })) ?? [];
  }

  /** The operator acts on an endpoint by id, whatever its tenant; so does the dispatcher. */
  get(id: string): Promise<EndpointDoc | null> {
    return this.endpoints.crossTenant('the operator and the dispatcher act on an endpoint by its id').findById(id);
  }

  async update(
    id: string,
    set: Partial<Omit<EndpointDoc, '_id' | 'tenantId'>>,
    unset: (keyof EndpointDoc)[] = [],
    where?: Record<string, unknown>,
  ): Promise<EndpointDoc | null> {
    const update = { $set: set, ...(unset.length > 0 && { $unset: Object.fromEntries(unset.map((k) => [k, 1])) }) };
    const updated = await this.endpoints
      .crossTenant('the operator and the dispatcher change an endpoint by its id')
      .updateById(id, update, where ? { where } : {});
    // This process reads its own write at once; the other replicas within their cache's time.
    this.cache.clear();
    return updated;
  }
}
