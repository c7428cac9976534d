import type { Schema } from 'mongoose';
import type { QueryShape } from '../src/mongo/query-shapes';

type IndexKeys = [string, number][];

/**
 * The shapes no declared index serves on MongoDB 7 by the equality → sort → range rule: an index
 * serves a shape when it starts with the equality fields (in any order), continues with the sort
 * fields in order (all in the index's direction or all reversed), then the range fields.
 * Returns one line per unserved shape; a store's unit test expects none.
 */
export function unservedShapes(schema: Schema, shapes: readonly QueryShape[]): string[] {
  const indexes: IndexKeys[] = [
    [['_id', 1]],
    ...schema.indexes().map(([keys]) => Object.entries(keys as Record<string, number>)),
  ];
  return shapes
    .filter((shape) => !indexes.some((keys) => serves(keys, shape)))
    .map(
      (shape) =>
        `${shape.name}: no index serves equality [${shape.equality.join(', ')}], sort ${JSON.stringify(shape.sort ?? {})}, range [${(shape.range ?? []).join(', ')}]`,
    );
}

function serves(keys: IndexKeys, shape: QueryShape): boolean {
  const fields = keys.map(([f]) => f);
  const eq = new Set(shape.equality);
  const head = fields.slice(0, eq.size);
  if (head.length !== eq.size || !head.every((f) => eq.has(f))) return false;
  let i = eq.size;

  const sort = Object.entries(shape.sort ?? {});
  if (sort.length > 0) {
    // Every sort field in order, each in the index's direction, or each reversed.
    let flip: boolean | undefined;
    for (const [field, dir] of sort) {
      const key = keys[i];
      if (!key || key[0] !== field) return false;
      const reversed = key[1] !== dir;
      if (flip !== undefined && flip !== reversed) return false;
      flip = reversed;
      i++;
    }
  }

  // A bound on a field the query also sorts by is served where the sort is.
  const range = new Set((shape.range ?? []).filter((f) => !(f in (shape.sort ?? {}))));
  const tail = fields.slice(i, i + range.size);
  return tail.length === range.size && tail.every((f) => range.has(f));
}
