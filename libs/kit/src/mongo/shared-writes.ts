import type { FilterQuery, Model, UpdateQuery } from 'mongoose';
import type { TenantOwned } from './tenant-owned';

// The bulk mechanics of the collections' "shared" operations: what many callers asked, in one round trip.

export interface SharedUpdate<D, Id> {
  _id: Id;
  tenantId?: string;
  where?: FilterQuery<D>;
  update: UpdateQuery<D>;
  /** Where the update's token goes, and the token. */
  mark: string;
  token: string;
}

/** The updates in one unordered bulk write, each with its token; then one read back tells which applied. */
export async function updateTogether<D extends TenantOwned, Id>(
  model: Model<D>,
  asked: readonly SharedUpdate<D, Id>[],
): Promise<(D | null)[]> {
  const ops = asked.map((u) => {
    const { $set, ...rest } = u.update as { $set?: Record<string, unknown> };
    const filter = { ...u.where, _id: u._id, ...(u.tenantId !== undefined && { tenantId: u.tenantId }) };
    return { updateOne: { filter, update: { ...rest, $set: { ...$set, [u.mark]: u.token } } } };
  });
  await model.bulkWrite(ops as never[], { ordered: false });
  const docs = await readTogether(model, asked);
  return asked.map((u, i) => {
    const doc = docs[i];
    return doc && valueAt(doc, u.mark) === u.token ? doc : null;
  });
}

/** The value at a dotted path of a document. */
function valueAt(doc: unknown, path: string): unknown {
  return path
    .split('.')
    .reduce<unknown>(
      (v, k) => (v !== null && typeof v === 'object' ? (v as Record<string, unknown>)[k] : undefined),
      doc,
    );
}

/** The documents asked for in one `$in` read; one under another tenant than asked reads as absent. */
export async function readTogether<D extends TenantOwned, Id>(
  model: Model<D>,
  asked: readonly { _id: Id; tenantId?: string }[],
): Promise<(D | null)[]> {
  const tenants = [...new Set(asked.map((a) => a.tenantId))];
  const filter = {
    _id: { $in: asked.map((a) => a._id) },
    ...(tenants.every((t) => t !== undefined) && { tenantId: { $in: tenants } }),
  };
  const byId = new Map(
    (
      await model
        .find(filter as FilterQuery<D>)
        .lean<D[]>()
        .exec()
    ).map((d) => [String(d._id), d]),
  );
  return asked.map((a) => {
    const doc = byId.get(String(a._id));
    return doc && (a.tenantId === undefined || doc.tenantId === a.tenantId) ? doc : null;
  });
}

/** Refuses an update that names `tenantId` as a field, under an operator, or as a rename target. */
export function refuseTenantChange(update: UpdateQuery<unknown>): void {
  if (Array.isArray(update)) throw new Error('pipeline updates are not supported here');
  const u = update as Record<string, unknown>;
  const names = (v: unknown): boolean =>
    v !== null && typeof v === 'object' && ('tenantId' in v || Object.values(v).includes('tenantId'));
  if ('tenantId' in u || Object.values(u).some(names)) throw new Error("a document's tenant never changes");
}
