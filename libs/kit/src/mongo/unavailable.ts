import { mongo } from 'mongoose';

/** The driver's errors when the store cannot be reached, is restarting or its pool was reset. */
const UNREACHABLE: readonly (abstract new (...args: never[]) => Error)[] = [
  mongo.MongoNetworkError, // and MongoNetworkTimeoutError, MongoPoolClearedError
  mongo.MongoServerSelectionError,
  mongo.MongoServerClosedError,
  mongo.MongoNotConnectedError,
  mongo.MongoTopologyClosedError,
  mongo.MongoOperationTimeoutError, // the client-side operation timeout (connect.ts): no answer in time
];
/** Socket errors: a write to a connection the store just closed fails EPIPE before the driver wraps it. */
const BROKEN_CONNECTION = new Set(['EPIPE', 'ECONNRESET', 'ECONNREFUSED', 'ECONNABORTED', 'ETIMEDOUT']);
/** Server answers of a store shutting down or a replica set changing its primary. */
const STEPPING_DOWN = new Set([91, 189, 10107, 11600, 11602, 13435, 13436]);

/** The store is away for now: answered "unavailable, retry"; the client's idempotent retry settles the write. */
export function isStoreUnavailable(err: unknown): boolean {
  type Err = {
    name?: unknown;
    code?: unknown;
    cause?: unknown;
    errorResponse?: unknown;
    hasErrorLabel?: (l: string) => boolean;
  };
  // A cut bulk write carries the network error as its `errorResponse`, not its `cause`: both are followed.
  const seen = new Set<unknown>();
  const pending: unknown[] = [err];
  while (pending.length > 0 && seen.size < 10) {
    const e = pending.shift() as Err | undefined;
    if (!e || typeof e !== 'object' || seen.has(e)) continue;
    seen.add(e);
    if (UNREACHABLE.some((kind) => e instanceof kind) || e.name === 'MongooseServerSelectionError') return true;
    if (typeof e.code === 'number' && STEPPING_DOWN.has(e.code)) return true;
    if (typeof e.code === 'string' && BROKEN_CONNECTION.has(e.code)) return true;
    if (
      typeof e.hasErrorLabel === 'function' &&
      (e.hasErrorLabel('ResetPool') || e.hasErrorLabel('RetryableWriteError'))
    )
      return true;
    pending.push(e.cause, e.errorResponse);
  }
  return false;
}
