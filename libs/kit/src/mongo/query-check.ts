import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { mongo, type Model } from 'mongoose';
import type { QueryShape } from './query-shapes';
import { isStoreUnavailable } from './unavailable';

const { MongoServerError } = mongo;

/** Declared query shapes by collection, so a query nobody declared can be told apart. */
const declared = new Map<string, QueryShape[]>();

export function declareQueries(model: Pick<Model<any>, 'collection'>, shapes: readonly QueryShape[]): void {
  const name = model.collection.collectionName;
  const list = declared.get(name) ?? [];
  for (const s of shapes) if (!list.some((d) => d.name === s.name)) list.push(s);
  declared.set(name, list);
}

/** A query as the store sees it: fields matched exactly, fields bounded, the order asked for. */
export interface ObservedShape {
  equality: string[];
  range: string[];
  sort: [string, 1 | -1][];
}

const isOperatorObject = (v: unknown): v is Record<string, unknown> =>
  v !== null &&
  typeof v === 'object' &&
  !Array.isArray(v) &&
  Object.keys(v).length > 0 &&
  Object.keys(v).every((k) => k.startsWith('$')) &&
  !('_bsontype' in v);

/**
 * The shape of a filter: `{a: 1, b: {$gt: 2}}` → equality [a], range [b]; `$and` and `$or` branches
 * merged into range. The sort as the driver sends it (a Map) or as an object.
 */
export function shapeOf(
  filter: Record<string, unknown>,
  sort: Record<string, unknown> | Map<string, unknown> = {},
): ObservedShape {
  const eq = new Set<string>();
  const range = new Set<string>();
  const walk = (f: Record<string, unknown>, inOr: boolean) => {
    for (const [k, v] of Object.entries(f)) {
      const branches = Array.isArray(v)
        ? v.filter((b): b is Record<string, unknown> => b !== null && typeof b === 'object')
        : [];
      if (k === '$and' && Array.isArray(v)) branches.forEach((b) => walk(b, inOr));
      else if ((k === '$or' || k === '$nor') && Array.isArray(v)) branches.forEach((b) => walk(b, true));
      else if (k.startsWith('$')) range.add(k);
      else if (!inOr && (!isOperatorObject(v) || (Object.keys(v).length === 1 && '$eq' in v))) eq.add(k);
      else range.add(k);
    }
  };
  walk(filter, false);
  for (const k of eq) range.delete(k);
  const order = sort instanceof Map ? [...sort] : Object.entries(sort);
  return {
    equality: [...eq].sort(),
    range: [...range].sort(),
    sort: order.map(([k, d]) => [k, Number(d) < 0 ? -1 : 1]),
  };
}

/**
 * The declared shape covering what was sent: its equality fields all matched, no field it does not name, its order.
 * A query bounding `_id` needs none: the primary key serves it.
 */
export function declaredShapeFor(collection: string, seen: ObservedShape): QueryShape | 'primary key' | undefined {
  if (seen.equality.includes('_id') || seen.range.includes('_id')) return 'primary key';
  const sent = [...seen.equality, ...seen.range];
  return (declared.get(collection) ?? []).find((d) => {
    const named = new Set([...d.equality, ...(d.range ?? []), ...Object.keys(d.sort ?? {}), ...(d.filtered ?? [])]);
    if (!d.equality.every((f) => sent.includes(f))) return false;
    if (!sent.every((f) => named.has(f))) return false;
    const want = Object.entries(d.sort ?? {});
    return (
      seen.sort.length === 0 ||
      (seen.sort.length === want.length && seen.sort.every(([f, dir], i) => want[i]![0] === f && want[i]![1] === dir))
    );
  });
}

/** The read a command makes, as a command `explain` accepts; undefined for commands that read nothing by filter. */
function readOf(
  cmd: Record<string, any>,
  name: string,
):
  | {
      collection: string;
      filter: Record<string, unknown>;
      sort?: Record<string, unknown> | Map<string, unknown>;
      explain: Record<string, unknown>;
    }
  | undefined {
  const coll = cmd[name] as string;
  switch (name) {
    case 'find':
      return {
        collection: coll,
        filter: cmd.filter ?? {},
        sort: cmd.sort,
        explain: {
          find: coll,
          filter: cmd.filter ?? {},
          ...(cmd.sort && { sort: cmd.sort }),
          ...(cmd.limit && { limit: cmd.limit }),
          ...(cmd.hint && { hint: cmd.hint }),
        },
      };
    case 'count':
      return cmd.query && Object.keys(cmd.query).length > 0
        ? { collection: coll, filter: cmd.query, explain: { count: coll, query: cmd.query } }
        : undefined;
    case 'distinct':
      return {
        collection: coll,
        filter: cmd.query ?? {},
        explain: { distinct: coll, key: cmd.key, query: cmd.query ?? {} },
      };
    case 'findAndModify':
      return {
        collection: coll,
        filter: cmd.query ?? {},
        sort: cmd.sort,
        explain: {
          findAndModify: coll,
          query: cmd.query ?? {},
          ...(cmd.sort && { sort: cmd.sort }),
          ...(cmd.remove ? { remove: true } : { update: cmd.update }),
          ...(cmd.upsert && { upsert: true }),
        },
      };
    case 'update': {
      const u = cmd.updates?.[0];
      return (
        u && {
          collection: coll,
          filter: u.q ?? {},
          explain: {
            update: coll,
            updates: [{ q: u.q, u: u.u, ...(u.multi && { multi: true }), ...(u.upsert && { upsert: true }) }],
          },
        }
      );
    }
    case 'delete': {
      const d = cmd.deletes?.[0];
      return (
        d && {
          collection: coll,
          filter: d.q ?? {},
          explain: { delete: coll, deletes: [{ q: d.q, limit: d.limit ?? 0 }] },
        }
      );
    }
    case 'aggregate': {
      const [first, second] = (cmd.pipeline ?? []) as Record<string, any>[];
      // A change stream reads the oplog, not the collection: there is no query to serve.
      if (first?.$changeStream) return undefined;
      if (!first?.$match)
        return { collection: coll, filter: {}, explain: { aggregate: coll, pipeline: cmd.pipeline, cursor: {} } };
      return {
        collection: coll,
        filter: first.$match,
        sort: second?.$sort,
        explain: { aggregate: coll, pipeline: cmd.pipeline, cursor: {} },
      };
    }
    default:
      return undefined;
  }
}

const scans = (plan: unknown): boolean => JSON.stringify(plan).includes('"COLLSCAN"');

/** The service a process runs (`services/<name>/dist/main.js`, `services/gateway/dist/main.js`), else its script's name. */
const processName = (): string => {
  const parts = (process.argv[1] ?? '').split(path.sep);
  const dist = parts.lastIndexOf('dist');
  return dist > 0 ? parts[dist - 1]! : path.basename(process.argv[1] ?? 'node');
};

/**
 * Test only (`STORE_QUERY_CHECK_DIR`): each new query shape is checked against the declarations and explained;
 * findings (undeclared, collection scan) go to `<dir>/<pid>.jsonl` for the harness to fail on. Off in production.
 */
export function checkQueries(client: mongo.MongoClient, dir = process.env.STORE_QUERY_CHECK_DIR): void {
  if (!dir) return;
  const file = path.join(dir, `${process.pid}.jsonl`);
  const seen = new Set<string>();
  // Never in the way of the query it looks at: a failure here is reported, not thrown.
  const report = (finding: Record<string, unknown>) => {
    try {
      appendFileSync(file, `${JSON.stringify({ process: processName(), ...finding })}\n`);
    } catch {
      /* the harness's folder is gone: the run is over */
    }
  };
  client.on('commandStarted', (e: mongo.CommandStartedEvent) => {
    try {
      check(e);
    } catch (err) {
      report({
        collection: '?',
        command: e.commandName,
        shape: { equality: [], range: [], sort: [] },
        declared: null,
        problem: `the query check failed: ${String(err)}`,
      });
    }
  });
  const check = (e: mongo.CommandStartedEvent) => {
    if (e.commandName === 'explain') return;
    const read = readOf(e.command as Record<string, any>, e.commandName);
    if (!read || read.collection.startsWith('system.')) return;
    const shape = shapeOf(read.filter, read.sort);
    const key = `${e.databaseName.replace(/_[0-9a-f]{8}$/, '')}.${read.collection} ${e.commandName} ${JSON.stringify(shape)}`;
    if (seen.has(key)) return;
    // Seen once explained: a shape first sent while the store is away is explained next time.
    seen.add(key);
    const match = declaredShapeFor(read.collection, shape);
    const problems = (scanned: boolean) =>
      [...(match === undefined ? ['no declared query shape'] : []), ...(scanned ? ['collection scan'] : [])].join(
        ' and ',
      ) || null;
    const record = (problem: string | null) =>
      report({
        collection: read.collection,
        command: e.commandName,
        shape,
        declared: typeof match === 'object' ? match.name : (match ?? null),
        problem,
        filter: read.filter,
      });
    void client
      .db(e.databaseName)
      .command({ explain: read.explain, verbosity: 'queryPlanner' })
      .then(
        (plan) => record(problems(scans(plan))),
        (err: unknown) => {
          // Store away or database dropped: the declaration is still checked; explained again next time.
          seen.delete(key);
          if (match === undefined) record(problems(false));
          // Only the store refusing to explain is a finding, not a client closing or a dropped namespace.
          else if (
            err instanceof MongoServerError &&
            !isStoreUnavailable(err) &&
            !/not found|NamespaceNotFound/i.test(String(err))
          )
            record(`explain failed: ${String(err)}`);
        },
      );
  };
}
