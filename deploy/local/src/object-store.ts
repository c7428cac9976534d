/**
 * The local object store: Versity's S3 gateway (versitygw, Apache-2.0) over its posix back end,
 * the Go module proxy's build (scripts/go-tool.sh, into the per-machine cache), on 127.0.0.1 with
 * every object a file under its data directory (decision 0136). The real S3 API: SigV4, presigned
 * URLs, ranged reads, multipart uploads. Its limits: no bucket lifecycle rules (the services sweep
 * what they expire), and a write is in the file system's cache until the kernel flushes it (a
 * process crash keeps it; a power cut may not).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawnProcess } from './children';
import type { LogFn } from './paths';
import { freePorts, tcpOpen } from './ports';
import { waitReady } from './probes';

export const OBJECT_STORE_VERSION = 'v1.8.0';
const REPO = path.resolve(__dirname, '../../..');
const HEALTH_PATH = '/healthz';

/** The root user's keys of a local object store: development only, like the store's open port. */
export const LOCAL_OBJECT_STORE_KEYS = {
  accessKeyId: 'voiceapi-local',
  secretAccessKey: 'voiceapi-local-object-store-secret',
} as const;

/** The binary, built on first use (about a minute, once per machine). */
export function objectStoreBinary(): string {
  return execFileSync(
    'bash',
    [
      path.join(REPO, 'scripts/go-tool.sh'),
      'versitygw',
      'github.com/versity/versitygw/cmd/versitygw',
      OBJECT_STORE_VERSION,
    ],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] },
  ).trim();
}

export interface ObjectStoreOptions {
  /** Its objects (created if missing): a bucket is a folder. */
  dataDir: string;
  /** 0 or undefined: a free port. */
  port?: number;
  /** Bind address: 127.0.0.1 by default; the local cluster's tests give the node's bridge address. */
  host?: string;
  log?: LogFn;
  signal?: AbortSignal;
}

export interface ObjectStoreHandle {
  /** http://HOST:PORT: the S3 endpoint (path-style addresses). */
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  port: number;
  pid: number;
  exited: Promise<string>;
  stop(): Promise<void>;
}

/** What a process's OBJECT_STORE_* settings are for this server (its bucket apart). */
export const objectStoreEnv = (h: ObjectStoreHandle): Record<string, string> => ({
  OBJECT_STORE_ENDPOINT: h.endpoint,
  OBJECT_STORE_REGION: h.region,
  OBJECT_STORE_FORCE_PATH_STYLE: 'true',
  OBJECT_STORE_ACCESS_KEY_ID: h.accessKeyId,
  OBJECT_STORE_SECRET_ACCESS_KEY: h.secretAccessKey,
  OBJECT_STORE_CREATE_BUCKET: 'true',
});

export async function startObjectStore(opts: ObjectStoreOptions): Promise<ObjectStoreHandle> {
  const bin = objectStoreBinary();
  const dataDir = path.resolve(opts.dataDir);
  fs.mkdirSync(dataDir, { recursive: true });
  const host = opts.host ?? '127.0.0.1';
  const port = opts.port || (await freePorts(1))[0]!;
  if (await tcpOpen(port, 1000, host))
    throw new Error(
      `the object store's port ${host}:${port} is taken by another process: stop it, or start afresh with a free port`,
    );
  const endpoint = `http://${host}:${port}`;
  const region = 'us-east-1';
  const proc = spawnProcess(
    'objects',
    bin,
    ['--port', `${host}:${port}`, '--region', region, '--health', HEALTH_PATH, '--quiet', 'posix', dataDir],
    {
      log: opts.log,
      cwd: dataDir,
      env: {
        ...process.env,
        ROOT_ACCESS_KEY_ID: LOCAL_OBJECT_STORE_KEYS.accessKeyId,
        ROOT_SECRET_ACCESS_KEY: LOCAL_OBJECT_STORE_KEYS.secretAccessKey,
      },
    },
  );
  await waitReady(
    proc,
    `object store ${HEALTH_PATH}`,
    60_000,
    async () => (await fetch(`${endpoint}${HEALTH_PATH}`)).ok,
    opts.signal,
  );
  return { endpoint, region, ...LOCAL_OBJECT_STORE_KEYS, port, pid: proc.pid, exited: proc.exited, stop: proc.stop };
}
