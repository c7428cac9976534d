import { type TenantScope } from '@voiceapi/kit/grpc';
import { modelOf, stringIds, TenantCollection, type QueryShape } from '@voiceapi/kit/mongo';
import { LRUCache } from 'lru-cache';
import { randomBytes } from 'node:crypto';
import { Schema, type Connection } from 'mongoose';

/** Sealed by the kit's SecretBox; a rotated-out one signs beside the new one until `retiresAt`. */
export interface SealedSecret {
  sealed: string;
  createdAt: Date;
  retiresAt?: Date;
}

/** `paused`: deliveries wait; `disabled`: by failures; `deleted`: kept for its delivery log. */
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
  /** The first failure since the last success. */
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
endpointSchema.index({ tenantId: 1, createdAt: 1 });

export const endpointQueryShapes: QueryShape[] = [
  { name: 'list and fan-out', equality: ['tenantId'], sort: { createdAt: 1 } },
];

export const newEndpointId = (): string => `ep_${randomBytes(12).toString('base64url')}`;

/** Few per tenant, so scanning a tenant's list is cheap. */
export class EndpointStore {
  private readonly endpoints: TenantCollection<EndpointDoc, string>;
  /** Read on every fan-out; own changes clear it, other replicas' show within `cacheTtlMs` (no change stream). */
  private readonly cache: LRUCache<string, EndpointDoc[], TenantScope>;

  constructor(conn: Connection, opts: { cacheTtlMs: number }) {
    this.endpoints = new TenantCollection(modelOf(conn, 'Endpoint', endpointSchema), stringIds, endpointQueryShapes);
    // lru-cache aborts a read under way on `clear`, so a change is never hidden by an older read.
    this.cache = new LRUCache({
      max: 10_000,
      ttl: opts.cacheTtlMs,
      fetchMethod: (_tenantId, _stale, { context }) => this.endpoints.find(context, {}, { sort: { createdAt: 1 } }),
    });
  }

  all(): AsyncGenerator<EndpointDoc[]> {
    return this.endpoints.crossTenant('the key rotation re-seals the secrets of every tenant').pages();
  }

  async insert(scope: TenantScope, doc: Omit<EndpointDoc, 'tenantId'>): Promise<EndpointDoc> {
    const inserted = await this.endpoints.insert(scope, doc);
    this.cache.clear();
    return inserted;
  }

  /** Oldest first, cached. */
  async list(scope: TenantScope): Promise<EndpointDoc[]> {
    return (await this.cache.fetch(scope.tenantId, { context: scope })) ?? [];
  }

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
    this.cache.clear();
    return updated;
  }
}
