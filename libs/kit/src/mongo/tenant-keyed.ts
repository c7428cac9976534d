import type { FilterQuery, Model, ProjectionType, UpdateQuery } from 'mongoose';
import { Coalescer } from '../coalesce';
import type { TenantScope } from '../context';
import type { WakeSource } from './change-feed';
import { upsertOnce } from './connect';
import { declareQueries } from './query-check';
import type { QueryShape } from './query-shapes';
import { pagesByPrimaryKey } from './walk';

/**
 * A tenant-owned collection whose `_id` is the tenant's id (one document per tenant: its wallet head, its settings),
 * so every operation is scoped by construction. Ids like `<tenant>:<n>` use `TenantCollection`.
 */
export class TenantKeyed<D extends { _id: string }> {
  private sharedReads: Coalescer<string, D | null> | undefined;

  constructor(
    // Private on purpose, as in TenantCollection: no unscoped query can be written through it.
    private readonly model: Model<D>,
    /** The queries beyond `_id` its store runs (`changedAcrossTenants`). */
    readonly shapes: readonly QueryShape[] = [],
  ) {
    declareQueries(model, shapes);
  }

  get(scope: TenantScope, projection?: ProjectionType<D>): Promise<D | null> {
    return this.model.findOne(this.own(scope), projection).lean<D>().exec();
  }

  /** `get` for hot paths: concurrent reads share one read, begun after they were asked, so each stays fresh. */
  getShared(scope: TenantScope): Promise<D | null> {
    this.sharedReads ??= new Coalescer(async (tenants) => {
      const docs = await this.model
        .find({ _id: { $in: [...new Set(tenants)] } } as FilterQuery<D>)
        .lean<D[]>()
        .exec();
      const byTenant = new Map(docs.map((d) => [d._id, d]));
      return tenants.map((t) => byTenant.get(t) ?? null);
    });
    return this.sharedReads.run(scope.tenantId);
  }

  async upsert(scope: TenantScope, update: UpdateQuery<D>): Promise<void> {
    await upsertOnce(this.model, this.own(scope), update);
  }

  /** Whether the tenant's document matched `where` (checked atomically) and was updated. */
  async update(scope: TenantScope, update: UpdateQuery<D>, where: FilterQuery<D> = {}): Promise<boolean> {
    return (await this.model.updateOne({ ...where, ...this.own(scope) }, update)).matchedCount === 1;
  }

  /** This collection's changes of these kinds, to wake a worker (`WorkerSpec.wakeOn`). */
  changes(operations: WakeSource['operations']): WakeSource {
    return { model: this.model, operations };
  }

  /** Every tenant's document, paged along the primary key, for sweeps; `why` says which. */
  pagesAcrossTenants(why: string, pageSize = 500): AsyncGenerator<D[]> {
    if (why.trim().length < 10) throw new Error('say why this read cannot be scoped to a tenant');
    return pagesByPrimaryKey(this.model, {}, pageSize);
  }

  /** Documents whose `field` (set on every change) is at or after `since`, earliest first; `why` says which sweep. */
  changedAcrossTenants(why: string, field: keyof D & string, since: Date, limit: number): Promise<D[]> {
    if (why.trim().length < 10) throw new Error('say why this read cannot be scoped to a tenant');
    return this.model
      .find({ [field]: { $gte: since } } as FilterQuery<D>)
      .sort({ [field]: 1 })
      .limit(limit)
      .lean<D[]>()
      .exec();
  }

  private own(scope: TenantScope): FilterQuery<D> {
    return { _id: scope.tenantId };
  }
}

/**
 * A collection no tenant owns (the number pool), used as a plain model; `why` says why for reviewers. The
 * conformance test accepts a store's model only through this, `TenantCollection` or `TenantKeyed`.
 */
export function platformModel<D>(model: Model<D>, why: string): Model<D> {
  if (why.trim().length < 10) throw new Error('say why no tenant owns this collection');
  return model;
}
