import mongoose, { type Connection, type FilterQuery, type Model, type Schema, type UpdateQuery } from 'mongoose';
import type { Logger } from '../logger';
import { checkQueries } from './query-check';
import { storeOps, watchSlowCommands } from './store-ops';

// Queries fail at once when the server is away instead of buffering until a hang.
mongoose.set('bufferCommands', false);
mongoose.set('strictQuery', true);
// Indexes are declared beside their schemas and built explicitly at start-up (syncIndexes below).
mongoose.set('autoIndex', false);
// Otherwise mongoose formats a stack trace on every query, only for a rerun query (never done here): 1–2 % CPU.
mongoose.set('skipOriginalStackTraces', true);

/** See `timeoutMS` below. */
export const STORE_OP_TIMEOUT_MS = 60_000;

/** Opens the service's own database, every command counted by `storeOps` (and query-checked under test). */
export async function connectMongo(opts: {
  url: string;
  dbName: string;
  log: Logger;
  /** `STORE_OPS_COUNTING` (commonEnv); the test harness's query check turns monitoring on too. */
  countOps?: boolean;
  /** `STORE_SLOW_COMMAND_MS` (commonEnv): commands this slow or slower are counted (with `countOps`). */
  slowCommandMs?: number;
  /** Default `STORE_OP_TIMEOUT_MS`; shorter only in tests that wait for it. */
  timeoutMS?: number;
}): Promise<Connection> {
  const checking = Boolean(process.env.STORE_QUERY_CHECK_DIR);
  const conn = mongoose.createConnection(opts.url, {
    dbName: opts.dbName,
    serverSelectionTimeoutMS: 10_000,
    // An answer that never comes (a half-open connection, a write cut by a store crash) fails as a timeout, not a
    // hang, which callers treat as the store away and retry (decision 0126). Longer than any wait asked of the
    // store (a change stream's 30 s await).
    timeoutMS: opts.timeoutMS ?? STORE_OP_TIMEOUT_MS,
    maxPoolSize: 20,
    monitorCommands: opts.countOps !== false || checking,
  });
  if (opts.countOps !== false) {
    storeOps.watch(conn.getClient());
    storeOps.reportOnSignal();
    watchSlowCommands(conn.getClient(), opts.log, {
      ...(opts.slowCommandMs !== undefined && { countMs: opts.slowCommandMs }),
    });
  }
  if (checking) checkQueries(conn.getClient());
  await conn.asPromise();
  conn.on('disconnected', () => opts.log.warn({ db: opts.dbName }, 'MongoDB disconnected'));
  conn.on('reconnected', () => opts.log.info({ db: opts.dbName }, 'MongoDB reconnected'));
  opts.log.info({ db: opts.dbName }, 'MongoDB connected');
  return conn;
}

/** The connection's model `name`, made from `schema` the first time and shared by its stores. */
export function modelOf<D>(conn: Connection, name: string, schema: Schema<D>): Model<D> {
  return (conn.models[name] as Model<D> | undefined) ?? conn.model<D>(name, schema);
}

/** Builds the indexes the connection's models declare (beside their schemas). Idempotent. */
export async function ensureIndexes(conn: Connection): Promise<void> {
  for (const model of Object.values(conn.models)) await model.createIndexes();
}

export const isObjectIdHex = (id: string): boolean => /^[a-f0-9]{24}$/i.test(id);

/** MongoDB's duplicate key error (a unique index refused the write). */
export const isDuplicateKeyError = (err: unknown): boolean =>
  typeof err === 'object' && err !== null && (err as { code?: unknown }).code === 11000;

/** A failed unordered insert's duplicate positions, or undefined if anything else failed (driver's or mongoose's). */
export function duplicatePositions(err: unknown): number[] | undefined {
  type WriteError = { index?: number; code?: number; err?: { index?: number; code?: number } };
  const raw = (err as { writeErrors?: WriteError[] | WriteError } | null)?.writeErrors;
  if (raw === undefined) return isDuplicateKeyError(err) ? [] : undefined;
  const list = Array.isArray(raw) ? raw : [raw];
  if (!list.every((w) => (w.code ?? w.err?.code) === 11000)) return undefined;
  return list.map((w) => w.index ?? w.err?.index ?? -1);
}

/**
 * An upsert a racing first write cannot fail: the loser's duplicate-key error is answered by updating the document
 * now there. A filter that still matches nothing (an `_id` of another tenant) keeps the error.
 */
export async function upsertOnce<D>(model: Model<D>, filter: FilterQuery<D>, update: UpdateQuery<D>): Promise<void> {
  await model.updateOne(filter, update, { upsert: true }).catch(async (err: unknown) => {
    if (!isDuplicateKeyError(err) || (await model.updateOne(filter, update)).matchedCount === 0) throw err;
  });
}

/** `upsertOnce` in one bulk write: a race reapplies the whole batch, so each update must be repeatable (a `$set`). */
export async function upsertManyOnce<D>(
  model: Model<D>,
  upserts: readonly { filter: FilterQuery<D>; update: UpdateQuery<D> }[],
  opts: { ordered: boolean },
): Promise<void> {
  if (upserts.length === 0) return;
  const ops = upserts.map((u) => ({ updateOne: { filter: u.filter, update: u.update, upsert: true } }));
  const write = () => model.bulkWrite(ops as never[], { ordered: opts.ordered });
  await write().catch(async (err: unknown) => {
    if (!isDuplicateKeyError(err) && duplicatePositions(err) === undefined) throw err;
    await write();
  });
}

/** Runs an unordered insert and answers the positions refused as duplicates; any other failure is thrown. */
export async function insertSkippingDuplicates(insert: () => Promise<unknown>): Promise<number[]> {
  try {
    await insert();
    return [];
  } catch (err) {
    const duplicates = duplicatePositions(err);
    if (!duplicates || duplicates.length === 0) throw err;
    return duplicates;
  }
}

/**
 * Inserts as built, skipping mongoose's hydration and validation (a third of billing's CPU in a burst of charges).
 * Undefined fields are left out, as mongoose would; schema defaults are not applied, so carry every field needed.
 */
export function insertAsBuilt<D>(model: Model<D>, docs: readonly unknown[], ordered: boolean): Promise<unknown> {
  return model.collection.insertMany(docs as never[], { ordered, ignoreUndefined: true });
}
