/**
 * The embedded MongoDB-compatible store: SecantusDB's Rust server (`secantusd-rs`, WiredTiger
 * underneath), built by install.sh into a per-machine cache and run as a child process on
 * 127.0.0.1 with its data in the given directory (decision 0110).
 *
 * What the project relies on, as on MongoDB 7: indexes serve queries, single-document
 * conditional updates are atomic, an acknowledged write survives a crash (`sync_on_commit` in
 * store/secantusd.toml), and the server is a single-node replica set (transactions). Its limits:
 * `sort().limit()` reads every match before trimming, TTL deletes run once a minute, no text
 * indexes.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawnProcess } from './children';
import { paths, type LogFn } from './paths';
import { freePorts, tcpOpen } from './ports';
import { mongoReady, waitReady } from './probes';

const STORE_START_TIMEOUT_MS = 60_000;

export interface StoreOptions {
  /** Data directory (created if missing). */
  dataDir: string;
  /** 0 or undefined: a free port. */
  port?: number;
  /**
   * Bind address. Default 127.0.0.1; the local cluster's tests give the node's bridge address
   * (scripts/cluster.sh), which its pods reach and nothing beyond this machine does.
   */
  host?: string;
  log?: LogFn;
  /** Aborting stops a start that is still waiting for readiness. */
  signal?: AbortSignal;
}

export interface StoreHandle {
  /** mongodb://HOST:PORT/?directConnection=true&retryWrites=false */
  url: string;
  port: number;
  pid: number;
  /** Resolves (with "code N" or "signal NAME") when the process exits. */
  exited: Promise<string>;
  /** SIGTERM (the server drains and checkpoints), wait, SIGKILL after 30 s. Safe to call more than once. */
  stop(): Promise<void>;
}

/**
 * The connection string of a store on this port (one node, addressed directly). Retryable writes
 * off: this store forgets at a crash which retried writes it applied, so the driver's retry would
 * apply a write twice (decision 0110; test/fault/store-faults.test.ts). MongoDB 7 keeps them on.
 */
export const storeUrl = (port: number, host = '127.0.0.1'): string =>
  `mongodb://${host}:${port}/?directConnection=true&retryWrites=false`;

export async function startStore(opts: StoreOptions): Promise<StoreHandle> {
  if (!fs.existsSync(paths.storeBin)) {
    throw new Error(`${paths.storeBin} is missing: run deploy/local/install.sh (or ensureInstalled())`);
  }
  const dataDir = path.resolve(opts.dataDir);
  try {
    fs.mkdirSync(dataDir, { recursive: true });
    fs.accessSync(dataDir, fs.constants.W_OK);
  } catch (err) {
    throw new Error(
      `the store's data directory ${dataDir} is not writable (${(err as Error).message}): fix its permissions or set DATA_DIR`,
    );
  }
  const host = opts.host ?? '127.0.0.1';
  const port = opts.port || (await freePorts(1))[0]!;
  if (await tcpOpen(port, 1000, host)) {
    throw new Error(
      `the store's port ${host}:${port} is taken by another process: stop it, or start afresh with a free port`,
    );
  }
  const url = storeUrl(port, host);
  const proc = spawnProcess(
    'store',
    paths.storeBin,
    ['--config', paths.storeConfig, '--host', host, '--port', String(port), '--storage-path', dataDir],
    // Its working directory is the data directory: nothing there or in it is read as a config.
    { log: opts.log, cwd: dataDir, stopTimeoutMs: 30_000 },
  );
  await waitReady(proc, 'MongoDB ping', STORE_START_TIMEOUT_MS, () => mongoReady(url), opts.signal);
  return { url, port, pid: proc.pid, exited: proc.exited, stop: proc.stop };
}
