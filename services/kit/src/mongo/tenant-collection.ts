// Over 300 lines because it keeps one job, the tenant-scoped operations; cross-tenant access and the shared bulk writes have files of their own.
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

/** A document owned by one tenant. Its tenant never changes once written. */
export interface TenantOwned {
  _id: unknown;
  tenantId: string;
}

/** A filter without the tenant: the collection adds it, so no caller can leave it out. */
export type ScopedFilter<D> = Omit<FilterQuery<D>, 'tenantId'>;

/** How ids of a collection look in URLs and in the store. */
export interface IdCodec<Id> {
  /** The stored id for a public id, or undefined when it cannot be one (answered as not found). */
  parse(id: string): Id | undefined;
}

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
 * The only way into a tenant-owned collection: every read, insert, update and delete is scoped
 * to the caller's tenant by construction. Point operations go by `_id` and the tenant in one
 * filter (another tenant's id is not found), served by the primary key. Queries that are not
 * point lookups must be declared in `shapes`, beside the indexes that serve them (a unit test
 * checks the indexes; the test harness checks every query sent against them).
 */
export class TenantCollection<D extends TenantOwned, Id = Types.ObjectId> {
  constructor(
    // Private on purpose: a store that could reach the model could write an unscoped query.
    private readonly model: Model<D>,
    private readonly ids: IdCodec<Id>,
    /** The queries this collection's store runs, for `unservedShapes`. */
    readonly shapes: readonly QueryShape[],
  ) {
    declareQueries(model, shapes);
  }

  async findById(scope: TenantScope, id: string, projection?: ProjectionType<D>): Promise<D | null> {
    const _id = this.ids.parse(id);
    if (_id === undefined) return null;
    return this.model.findOne({ _id, tenantId: scope.tenantId }, projection).lean<D>();
  }

  /** `updateByIdShared`'s writes: the updates asked while one is under way, written together next. */
  private sharedUpdates: Coalescer<SharedUpdate<D, Id>, D | null> | undefined;

  /**
   * `updateById` for hot paths where many requests change documents at once (calls ringing,
   * contacts moving on): the updates asked while one is under way are one bulk write and one read
   * back. Each update also sets a token of its own at `mark` (a field naming the kind of change),
   * which the read back compares: the caller gets the document after its update when its update
   * applied, else null. Updates of one `mark` that could both apply must not be asked at once
   * (their `where` exclude each other, as moves from a state do). The schema must declare `mark`'s
   * path (mongoose drops paths it does not know, and the update would read as never applied).
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

  /** `applyByIdShared`'s writes: the updates asked while one is under way, written together next. */
  private sharedApplies: Coalescer<Omit<SharedUpdate<D, Id>, 'mark' | 'token'>, undefined> | undefined;

  /**
   * `updateByIdShared` for a caller that needs nothing back (whether the update applied, or the
   * document after it): the updates asked while one is under way are one unordered bulk write, and
   * nothing is read. An id not the tenant's, absent or not matching `where` is left alone.
   */
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

  /** `findByIdShared`'s reads: the ids asked while one read is under way, read together next. */
  private sharedReads: Coalescer<{ tenantId: string; _id: Id }, D | null> | undefined;

  /**
   * `findById` for hot paths where many requests read at once (a dial pass's contacts): the reads
   * asked while one is under way are served by one read of all their ids, begun after they were
   * asked, so each is as fresh as a read of its own.
   */
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

  /**
   * A page of a list, newest first or as sorted. One extra row tells whether more follow; the
   * count runs only when they do, and stops at `COUNT_CAP` (decision 0012).
   */
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

  /** Matching rows, counted up to `COUNT_CAP`. */
  count(scope: TenantScope, filter: ScopedFilter<D>): Promise<number> {
    return this.model.countDocuments(this.scoped(scope, filter), { limit: COUNT_CAP }).exec();
  }

  /**
   * Matching rows counted per distinct combination of `fields` (a stats query served by an index
   * on the tenant, the filter's fields and these), capped per group at `COUNT_CAP`.
   */
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

  /** Deletes the tenant's documents that match; the number deleted. */
  async deleteMany(scope: TenantScope, filter: ScopedFilter<D>): Promise<number> {
    return (await this.model.deleteMany(this.scoped(scope, filter))).deletedCount;
  }

  async insert(scope: TenantScope, doc: Omit<D, 'tenantId' | '_id'> & { _id?: Id }): Promise<D> {
    const created = await this.model.create({ ...doc, tenantId: scope.tenantId });
    return created.toObject();
  }

  /**
   * Inserts several documents of the tenant in one round trip (ordered: the first failure stops
   * it), as built (see `insertAsBuilt`).
   */
  async insertMany(scope: TenantScope, docs: readonly (Omit<D, 'tenantId' | '_id'> & { _id?: Id })[]): Promise<void> {
    if (docs.length === 0) return;
    await insertAsBuilt(
      this.model,
      docs.map((d) => ({ ...d, tenantId: scope.tenantId })),
      true,
    );
  }

  /**
   * Inserts the tenant's documents in one round trip, unordered: those whose id exists already are
   * skipped, and their positions answered (any other failure throws).
   */
  /** `insertShared`'s inserts: the documents asked while one insert is under way, inserted together next. */
  private sharedInserts: Coalescer<D, boolean> | undefined;

  /**
   * Inserts the tenant's document with its own id, the inserts asked while one is under way going
   * in one unordered write (as built, see `insertAsBuilt`): true when this insert created it, false
   * when a document with its id exists already (a replay; a duplicate is refused alone).
   */
  insertShared(scope: TenantScope, doc: Omit<D, 'tenantId' | '_id'> & { _id: Id }): Promise<boolean> {
    this.sharedInserts ??= new Coalescer(async (docs) => {
      const refused = new Set(await insertSkippingDuplicates(() => insertAsBuilt(this.model, docs, false)));
      return docs.map((_, i) => !refused.has(i));
    });
    return this.sharedInserts.run({ ...doc, tenantId: scope.tenantId } as unknown as D);
  }

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

  /**
   * Applies the update to the tenant's document; null when it is not the tenant's, is absent, or
   * does not match `where` (a condition checked atomically with the write, e.g. a state).
   */
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

  /**
   * Applies the update to the tenant's document with this id, inserting it (with the tenant) when
   * there is none. For ids the tenant's own key makes (`<tenant>:<n>`, `<tenant>|<day>`).
   */
  async upsertById(scope: TenantScope, id: string, update: UpdateQuery<D>): Promise<void> {
    refuseTenantChange(update);
    const _id = this.ids.parse(id);
    if (_id === undefined) throw new Error(`not an id of this collection: ${id}`);
    // An id another tenant holds matches neither the upsert nor its retry: it stays a duplicate.
    await upsertOnce(this.model, { _id, tenantId: scope.tenantId }, update);
  }

  /** Applies the update to every document of the tenant that matches; the number changed. */
  async updateMany(scope: TenantScope, filter: ScopedFilter<D>, update: UpdateQuery<D>): Promise<number> {
    refuseTenantChange(update);
    return (await this.model.updateMany(this.scoped(scope, filter), update)).modifiedCount;
  }

  /**
   * How to read back whether a write to the tenant's document `id` happened, for the events that
   * announce it (`Announcer.announce`): once it did, the document is `present` (matching `where`
   * too: a field only this write sets, such as its time) or `absent`.
   */
  readBack(scope: TenantScope, id: string, applied: 'present' | 'absent', where?: ScopedFilter<D>): ReadBack {
    // An id that cannot be one matches nothing, as its write did.
    return {
      collection: this.model.collection.collectionName,
      filter: { ...where, _id: this.ids.parse(id) ?? id, tenantId: scope.tenantId },
      applied,
    };
  }

  /** This collection's changes of these kinds, to wake a worker (`WorkerSpec.wakeOn`); no document is read through it. */
  changes(operations: WakeSource['operations']): WakeSource {
    return { model: this.model, operations };
  }

  /**
   * The escape hatch for the rare lookup that cannot know the tenant yet: a signed recording URL,
   * an inbound call routed by the number it dialled, a sweeper working across tenants. `why`
   * says which, at the call site, where a reviewer sees it.
   */
  crossTenant(why: string): CrossTenantAccess<D, Id> {
    if (why.trim().length < 10) throw new Error('say why this lookup cannot be scoped to a tenant');
    // One handle per reason: its shared reads and writes coalesce across the calls that give it
    // (reasons are string literals at their call sites, test/conformance checks it, so few).
    let handle = this.crossTenantHandles.get(why);
    if (!handle) this.crossTenantHandles.set(why, (handle = new CrossTenantAccess(this.model, this.ids)));
    return handle;
  }

  private readonly crossTenantHandles = new Map<string, CrossTenantAccess<D, Id>>();

  private scoped(scope: TenantScope, filter: ScopedFilter<D>): FilterQuery<D> {
    return { ...filter, tenantId: scope.tenantId };
  }
}
