/**
 * FerretDB 1.24 (MongoDB wire protocol, SQLite backend), built by install.sh from ../ferretdb,
 * run as a child process on 127.0.0.1 with its data in the given directory.
 *
 * FerretDB 1.24 gaps met with mongodb 6.x / mongoose 8.x (production runs real MongoDB 7):
 *  - findAndModify `fields` is NotImplemented (code 238): any projection on findOneAndUpdate /
 *    findOneAndDelete fails, including the implicit one mongoose adds for `select: false` paths
 *    and an empty `{}`. Project in application code instead.
 *  - A unique-index violation caused by an update/replace (not an insert or upsert-insert) comes
 *    back as code 1 InternalError "UNIQUE constraint failed", not 11000. E11000 errors carry no
 *    keyPattern/keyValue.
 *  - Concurrent upserts on one unique key: MongoDB retries internally, FerretDB returns 11000 to
 *    all but one; callers should retry an upsert once on 11000.
 *  - No sessions/transactions (driver `autocommit` field rejected), no TTL indexes.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawnProcess } from './children';
import { paths, type LogFn } from './paths';
import { freePorts } from './ports';
import { mongoReady, waitReady } from './probes';

const FERRET_START_TIMEOUT_MS = 30_000;

export interface FerretOptions {
  /** SQLite data directory (created if missing). */
  dataDir: string;
  /** 0 or undefined: a free port. */
  port?: number;
  log?: LogFn;
  /** FerretDB log level (debug, info, warn, error). Default: error (warn logs every error reply in full), or $FERRETDB_LOG_LEVEL. */
  logLevel?: string;
  /** Aborting stops a start that is still waiting for readiness. */
  signal?: AbortSignal;
}

export interface FerretHandle {
  /** mongodb://127.0.0.1:PORT/ */
  url: string;
  port: number;
  pid: number;
  /** Resolves (with "code N" or "signal NAME") when the process exits. */
  exited: Promise<string>;
  /** SIGTERM, wait (SIGKILL after 10 s). Safe to call more than once. */
  stop(): Promise<void>;
}

export async function startFerret(opts: FerretOptions): Promise<FerretHandle> {
  if (!fs.existsSync(paths.ferretBin)) {
    throw new Error(`${paths.ferretBin} is missing: run deploy/local/install.sh (or ensureInstalled())`);
  }
  const dataDir = path.resolve(opts.dataDir);
  fs.mkdirSync(dataDir, { recursive: true });
  const port = opts.port || (await freePorts(1))[0]!;
  const url = `mongodb://127.0.0.1:${port}/`;
  const logLevel = opts.logLevel ?? process.env.FERRETDB_LOG_LEVEL ?? 'error';

  const proc = spawnProcess(
    'ferretdb',
    paths.ferretBin,
    ['-listen', `127.0.0.1:${port}`, '-data', dataDir, '-log-level', logLevel],
    { log: opts.log },
  );
  await waitReady(proc, 'MongoDB ping', FERRET_START_TIMEOUT_MS, () => mongoReady(url), opts.signal);
  return { url, port, pid: proc.pid, exited: proc.exited, stop: proc.stop };
}
