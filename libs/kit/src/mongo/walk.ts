import { mongo, type FilterQuery, type Model } from 'mongoose';

/** The documents matching `filter`, a page at a time along the primary key: for sweeps of a whole collection. */
export async function* pagesByPrimaryKey<D extends { _id: unknown }>(
  model: Model<D>,
  filter: FilterQuery<D> = {},
  pageSize = 500,
): AsyncGenerator<D[]> {
  for (let after: unknown = new mongo.MinKey(); ;) {
    // The driver's collection: the schema would try to cast MinKey to the `_id` type.
    const docs = (await model.collection
      .find({ ...filter, _id: { $gt: after } } as mongo.Filter<mongo.Document>)
      .sort({ _id: 1 })
      .limit(pageSize)
      .toArray()) as unknown as D[];
    if (docs.length > 0) yield docs;
    if (docs.length < pageSize) return;
    after = docs[docs.length - 1]!._id;
  }
}
