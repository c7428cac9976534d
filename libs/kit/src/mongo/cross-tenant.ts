import { randomUUID } from 'node:crypto';
import type { FilterQuery, Model, ProjectionType, UpdateQuery } from 'mongoose';
import { Coalescer } from '../coalesce';
import { insertAsBuilt, insertSkippingDuplicates, upsertManyOnce } from './connect';
import { readTogether, refuseTenantChange, updateTogether, type SharedUpdate } from './shared-writes';
import type { IdCodec, TenantOwned } from './tenant-owned';
import { pagesByPrimaryKey } from './walk';

/** Reads and deletes across tenants; made only by `TenantCollection.crossTenant(why)`. */
export class CrossTenantAccess<D extends TenantOwned, Id> {
  constructor(
    private readonly model: Model<D>,
    private readonly ids: IdCodec<Id>,
  ) {}

  findById(id: string, projection?: ProjectionType<D>): Promise<D | null> {
    const _id = this.ids.parse(id);
    if (_id === undefined) return Promise.resolve(null);
    return this.model.findOne({ _id }, projection).lean<D>().exec();
  }

  find(filter: FilterQuery<D>, opts: { sort?: Record<string, 1 | -1>; limit?: number } = {}): Promise<D[]> {
    let q = this.model.find(filter);
    if (opts.sort) q = q.sort(opts.sort);
    if (opts.limit) q = q.limit(opts.limit);
    return q.lean<D[]>().exec();
  }

  private sharedReads: Coalescer<{ _id: Id }, D | null> | undefined;

  /** These ids' documents in one read, each only under the tenant asked for (else null). */
  findManyById(asked: readonly { id: Id; tenantId: string }[]): Promise<(D | null)[]> {
    return readTogether(
      this.model,
      asked.map((a) => ({ _id: a.id, tenantId: a.tenantId })),
    );
  }

  /** As `TenantCollection.findByIdShared`. */
  async findByIdShared(id: string): Promise<D | null> {
    const _id = this.ids.parse(id);
    if (_id === undefined) return null;
    this.sharedReads ??= new Coalescer((asked) => readTogether(this.model, asked));
    return this.sharedReads.run({ _id });
  }

  private sharedUpdates: Coalescer<SharedUpdate<D, Id>, D | null> | undefined;

  /** As `TenantCollection.updateByIdShared`. */
  async updateByIdShared(
    id: string,
    update: UpdateQuery<D>,
    opts: { where?: FilterQuery<D>; mark: string },
  ): Promise<D | null> {
    refuseTenantChange(update);
    const _id = this.ids.parse(id);
    if (_id === undefined) return null;
    this.sharedUpdates ??= new Coalescer((asked) => updateTogether(this.model, asked));
    return this.sharedUpdates.run({ _id, where: opts.where, update, mark: opts.mark, token: randomUUID() });
  }

  updateById(id: string, update: UpdateQuery<D>, opts: { where?: FilterQuery<D> } = {}): Promise<D | null> {
    refuseTenantChange(update);
    const _id = this.ids.parse(id);
    if (_id === undefined) return Promise.resolve(null);
    return this.model
      .findOneAndUpdate({ ...opts.where, _id }, update, { new: true })
      .lean<D>()
      .exec();
  }

  async deleteMany(filter: FilterQuery<D>): Promise<number> {
    return (await this.model.deleteMany(filter)).deletedCount;
  }

  distinct<K extends keyof D & string>(field: K, filter: FilterQuery<D> = {}): Promise<D[K][]> {
    return this.model.distinct(field, filter).exec() as Promise<D[K][]>;
  }

  /** Inserts several tenants' documents, unordered and as built; answers the positions refused as duplicates. */
  async insertManyUnordered(docs: readonly D[]): Promise<number[]> {
    if (docs.length === 0) return [];
    return insertSkippingDuplicates(() => insertAsBuilt(this.model, docs, false));
  }

  /**
   * Upserts each by id and tenant in one unordered write (many calls' marks at once). A race reapplies the whole
   * batch, so each update must be repeatable (`$set`, `$max`, `$addToSet`, not `$inc`).
   */
  async upsertManyById(updates: readonly { id: Id; tenantId: string; update: UpdateQuery<D> }[]): Promise<void> {
    for (const u of updates) refuseTenantChange(u.update);
    await upsertManyOnce(
      this.model,
      updates.map((u) => ({ filter: { _id: u.id, tenantId: u.tenantId }, update: u.update })),
      { ordered: false },
    );
  }

  /** Updates each by id (and tenant, and `where`, when given) in one unordered write; a non-match is left alone. */
  async updateManyById(
    updates: readonly { id: Id; tenantId?: string; where?: FilterQuery<D>; update: UpdateQuery<D> }[],
  ): Promise<void> {
    if (updates.length === 0) return;
    for (const u of updates) refuseTenantChange(u.update);
    const filter = (u: (typeof updates)[number]) =>
      ({ ...u.where, _id: u.id, ...(u.tenantId !== undefined && { tenantId: u.tenantId }) }) as FilterQuery<D>;
    await this.model.bulkWrite(
      updates.map((u) => ({ updateOne: { filter: filter(u), update: u.update } })) as never[],
      { ordered: false },
    );
  }

  /** The documents matching `filter`, paged along the primary key (sweeps). */
  pages(filter: FilterQuery<D> = {}, pageSize = 500): AsyncGenerator<D[]> {
    return pagesByPrimaryKey(this.model, filter, pageSize);
  }
}
