import type { FilterQuery, Model } from 'mongoose';

/**
 * Every document of a collection, read in pages along the primary key (each page an index walk
 * from where the last one ended): for sweeps that must see a whole, small collection.
 */
export async function allByPrimaryKey<D extends { _id: string }>(model: Model<D>, pageSize = 500): Promise<D[]> {
  const out: D[] = [];
  for (let after = ''; ; ) {
    const docs = await model.find({ _id: { $gt: after } } as FilterQuery<D>).sort({ _id: 1 }).limit(pageSize).lean<D[]>();
    out.push(...docs);
    if (docs.length < pageSize) return out;
    after = docs[docs.length - 1]!._id;
  }
}
