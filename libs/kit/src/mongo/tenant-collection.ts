import { randomUUID } from 'node:crypto';
import { Types, type FilterQuery, type Model, type ProjectionType, type UpdateQuery } from 'mongoose';
import { Coalescer } from '../coalesce';
import type { TenantScope } from '../context';
import { insertAsBuilt, insertSkippingDuplicates, isObjectIdHex, upsertOnce } from './connect';
import { CrossTenantAccess } from './cross-tenant';
import { readTogether, refuseTenantChange, updateTogether, type SharedUpdate } from './shared-writes';
import { declareQueries } from './query-check';
import type { WakeSource } from './change-feed';
import type { ReadBack } from '../events/announce';
import type { QueryShape } from './query-shapes';
import type { IdCodec, TenantOwned } from './tenant-owned';

export type { IdCodec, TenantOwned } from './tenant-owned';

/** A filter without the tenant: the collection adds it, so no caller can leave it out. */
export type ScopedFilter<D> = Omit<FilterQuery<D>, 'tenantId'>;

export const objectIds: IdCodec<Types.ObjectId> = {
  parse: (id) => (isObjectIdHex(id) ? new Types.ObjectId(id) : undefined),
};

export const stringIds: IdCodec<string> = { parse: (id) => (id.length > 0 && id.length <= 200 ? id : undefined) };

/** Rows counted exactly before a list's total is reported as "at least this many". */
export const COUNT_CAP = 10_000;

export interface Page<D> {
  items: D[];
  /** Exact below `COUNT_CAP`; at the cap it means "at least". */
  total: number;
  hasMore: boolean;
}

/**
 * The only way into a tenant-owned collection: every operation is scoped to the caller's tenant by construction
 * (a point lookup filters on `_id` and tenant, so another tenant's id is not found). Other queries are declared in
 * `shapes`, beside the indexes that serve them.
 */
export class TenantCollection<D extends TenantOwned, Id = Types.ObjectId> {
  constructor(
    // Private on purpose: a store that could reach the model could write an unscoped query.
    private readonly model: Model<D>,
    private readonly ids: IdCodec<Id>,
    readonly shapes: readonly QueryShape[],
  ) {
    declareQueries(model, shapes);
  }

  async findById(scope: TenantScope, id: string, projection?: ProjectionType<D>): Promise<D | null> {
    const _id = this.ids.parse(id);
    if (_id === undefined) return null;
    return this.model.findOne({ _id, tenantId: scope.tenantId }, projection).lean<D>();
  }

  private sharedUpdates: Coalescer<SharedUpdate<D, Id>, D | null> | undefined;

  /**
   * `updateById` for hot paths: concurrent updates become one bulk write and one read back, each setting its own
   * token at `mark` to tell whether it applied. Updates of one `mark` that could both apply must not be asked at
   * once (their `where` must exclude each other, as moves from a state do). The schema must declare `mark`'s path,
   * or mongoose drops it and the update reads as never applied.
   */
  async updateByIdShared(
    scope: TenantScope,
    id: string,
    update: UpdateQuery<D>,
    opts: { where?: ScopedFilter<D>; mark: string },
  ): Promise<D | null> {
    refuseTenantChange(update);
    const _id = this.ids.parse(id);
    if (_id === undefined) return null;
    this.sharedUpdates ??= new Coalescer((asked) => updateTogether(this.model, asked));
    return this.sharedUpdates.run({
      _id,
      tenantId: scope.tenantId,
      where: opts.where as FilterQuery<D> | undefined,
      update,
      mark: opts.mark,
      token: randomUUID(),
    });
  }

  private sharedApplies: Coalescer<Omit<SharedUpdate<D, Id>, 'mark' | 'token'>, undefined> | undefined;

  /** `updateByIdShared` for a caller that needs nothing back: one unordered bulk write, nothing read. */
  async applyByIdShared(
    scope: TenantScope,
    id: string,
    update: UpdateQuery<D>,
    opts: { where?: ScopedFilter<D> } = {},
  ): Promise<void> {
    refuseTenantChange(update);
    const _id = this.ids.parse(id);
    if (_id === undefined) return;
    const model = this.model;
    this.sharedApplies ??= new Coalescer(async (asked) => {
      await model.bulkWrite(
        asked.map((u) => ({
          updateOne: { filter: { ...u.where, _id: u._id, tenantId: u.tenantId }, update: u.update },
        })) as never[],
        { ordered: false },
      );
      return asked.map(() => undefined);
    });
    await this.sharedApplies.run({
      _id,
      tenantId: scope.tenantId,
      where: opts.where as FilterQuery<D> | undefined,
      update,
    });
  }

  private sharedReads: Coalescer<{ tenantId: string; _id: Id }, D | null> | undefined;

  /** `findById` for hot paths: concurrent reads share one read, begun after they were asked, so each stays fresh. */
  async findByIdShared(scope: TenantScope, id: string): Promise<D | null> {
    const _id = this.ids.parse(id);
    if (_id === undefined) return null;
    this.sharedReads ??= new Coalescer((asked) => readTogether(this.model, asked));
    return this.sharedReads.run({ tenantId: scope.tenantId, _id });
  }

  find(
    scope: TenantScope,
    filter: ScopedFilter<D>,
    opts: { sort?: Record<string, 1 | -1>; skip?: number; limit?: number; projection?: ProjectionType<D> } = {},
  ): Promise<D[]> {
    let q = this.model.find(this.scoped(scope, filter), opts.projection);
    if (opts.sort) q = q.sort(opts.sort);
    if (opts.skip) q = q.skip(opts.skip);
    if (opts.limit) q = q.limit(opts.limit);
    return q.lean<D[]>().exec();
  }

  async findOne(
    scope: TenantScope,
    filter: ScopedFilter<D>,
    opts: { sort?: Record<string, 1 | -1>; projection?: ProjectionType<D> } = {},
  ): Promise<D | null> {
    const [doc] = await this.find(scope, filter, { ...opts, limit: 1 });
    return doc ?? null;
  }

  /** A page; one extra row tells whether more follow, and only then a count runs, capped (decision 0012). */
  async page(
    scope: TenantScope,
    filter: ScopedFilter<D>,
    opts: { sort: Record<string, 1 | -1>; page: number; limit: number; projection?: ProjectionType<D> },
  ): Promise<Page<D>> {
    const skip = (opts.page - 1) * opts.limit;
    const rows = await this.find(scope, filter, {
      sort: opts.sort,
      skip,
      limit: opts.limit + 1,
      ...(opts.projection && { projection: opts.projection }),
    });
    const hasMore = rows.length > opts.limit;
    const items = hasMore ? rows.slice(0, opts.limit) : rows;
    // Rows this page proves exist (none when the page lies past the end).
    const seen = items.length > 0 ? skip + items.length + (hasMore ? 1 : 0) : 0;
    if (!hasMore && (items.length > 0 || skip === 0)) return { items, total: seen, hasMore };
    // A capped count is still at least what this page has shown to exist.
    return { items, total: Math.max(await this.count(scope, filter), seen), hasMore };
  }

  count(scope: TenantScope, filter: ScopedFilter<D>): Promise<number> {
    return this.model.countDocuments(this.scoped(scope, filter), { limit: COUNT_CAP }).exec();
  }

  /** Matching rows counted per combination of `fields`, capped per group at `COUNT_CAP`. */
  async countBy<K extends string>(
    scope: TenantScope,
    filter: ScopedFilter<D>,
    fields: readonly K[],
  ): Promise<{ key: Record<K, unknown>; count: number }[]> {
    const groupId = Object.fromEntries(fields.map((f) => [f, `$${f}`]));
    const rows = await this.model
      .aggregate<{ _id: Record<K, unknown>; count: number }>([
        { $match: this.scoped(scope, filter) },
        { $group: { _id: groupId, count: { $sum: 1 } } },
      ])
      .exec();
    return rows.map((r) => ({ key: r._id, count: Math.min(r.count, COUNT_CAP) }));
  }

  async deleteMany(scope: TenantScope, filter: ScopedFilter<D>): Promise<number> {
    return (await this.model.deleteMany(this.scoped(scope, filter))).deletedCount;
  }

  async insert(scope: TenantScope, doc: Omit<D, 'tenantId' | '_id'> & { _id?: Id }): Promise<D> {
    const created = await this.model.create({ ...doc, tenantId: scope.tenantId });
    return created.toObject();
  }

  /** Inserts in one ordered round trip (the first failure stops it), as built (`insertAsBuilt`). */
  async insertMany(scope: TenantScope, docs: readonly (Omit<D, 'tenantId' | '_id'> & { _id?: Id })[]): Promise<void> {
    if (docs.length === 0) return;
    await insertAsBuilt(
      this.model,
      docs.map((d) => ({ ...d, tenantId: scope.tenantId })),
      true,
    );
  }

  private sharedInserts: Coalescer<D, boolean> | undefined;

  /** Inserts with its own id, concurrent inserts in one unordered write: false when the id exists (a replay). */
  insertShared(scope: TenantScope, doc: Omit<D, 'tenantId' | '_id'> & { _id: Id }): Promise<boolean> {
    this.sharedInserts ??= new Coalescer(async (docs) => {
      const refused = new Set(await insertSkippingDuplicates(() => insertAsBuilt(this.model, docs, false)));
      return docs.map((_, i) => !refused.has(i));
    });
    return this.sharedInserts.run({ ...doc, tenantId: scope.tenantId } as unknown as D);
  }

  /** Inserts in one unordered round trip; answers the positions skipped because their id exists. */
  async insertNew(scope: TenantScope, docs: readonly (Omit<D, 'tenantId' | '_id'> & { _id: Id })[]): Promise<number[]> {
    if (docs.length === 0) return [];
    return insertSkippingDuplicates(() =>
      insertAsBuilt(
        this.model,
        docs.map((d) => ({ ...d, tenantId: scope.tenantId })),
        false,
      ),
    );
  }

  /** Null when the document is not the tenant's, is absent, or fails `where` (checked atomically with the write). */
  async updateById(
    scope: TenantScope,
    id: string,
    update: UpdateQuery<D>,
    opts: { where?: ScopedFilter<D> } = {},
  ): Promise<D | null> {
    refuseTenantChange(update);
    const _id = this.ids.parse(id);
    if (_id === undefined) return null;
    return this.model
      .findOneAndUpdate({ ...opts.where, _id, tenantId: scope.tenantId }, update, { new: true })
      .lean<D>();
  }

  async deleteById(scope: TenantScope, id: string, opts: { where?: ScopedFilter<D> } = {}): Promise<boolean> {
    const _id = this.ids.parse(id);
    if (_id === undefined) return false;
    return (await this.model.deleteOne({ ...opts.where, _id, tenantId: scope.tenantId })).deletedCount === 1;
  }

  /** Updates or inserts, for ids the tenant's own key makes (`<tenant>:<n>`, `<tenant>|<day>`). */
  async upsertById(scope: TenantScope, id: string, update: UpdateQuery<D>): Promise<void> {
    refuseTenantChange(update);
    const _id = this.ids.parse(id);
    if (_id === undefined) throw new Error(`not an id of this collection: ${id}`);
    // An id another tenant holds matches neither the upsert nor its retry: it stays a duplicate.
    await upsertOnce(this.model, { _id, tenantId: scope.tenantId }, update);
  }

  async updateMany(scope: TenantScope, filter: ScopedFilter<D>, update: UpdateQuery<D>): Promise<number> {
    refuseTenantChange(update);
    return (await this.model.updateMany(this.scoped(scope, filter), update)).modifiedCount;
  }

  /** How an announced write to `id` is read back: `present` (matching `where`, e.g. its time) or `absent`. */
  readBack(scope: TenantScope, id: string, applied: 'present' | 'absent', where?: ScopedFilter<D>): ReadBack {
    // An id that cannot be one matches nothing, as its write did.
    return {
      collection: this.model.collection.collectionName,
      filter: { ...where, _id: this.ids.parse(id) ?? id, tenantId: scope.tenantId },
      applied,
    };
  }

  /** This collection's changes of these kinds, to wake a worker (`WorkerSpec.wakeOn`); no document is read. */
  changes(operations: WakeSource['operations']): WakeSource {
    return { model: this.model, operations };
  }

  /** For a lookup that cannot know the tenant yet (an inbound call by number); `why` says which, for reviewers. */
  crossTenant(why: string): CrossTenantAccess<D, Id> {
    if (why.trim().length < 10) throw new Error('say why this lookup cannot be scoped to a tenant');
    // One handle per reason (few: literals, checked by test/conformance), so its shared operations coalesce.
    let handle = this.crossTenantHandles.get(why);
    if (!handle) this.crossTenantHandles.set(why, (handle = new CrossTenantAccess(this.model, this.ids)));
    return handle;
  }

  private readonly crossTenantHandles = new Map<string, CrossTenantAccess<D, Id>>();

  private scoped(scope: TenantScope, filter: ScopedFilter<D>): FilterQuery<D> {
    return { ...filter, tenantId: scope.tenantId };
  }
}
