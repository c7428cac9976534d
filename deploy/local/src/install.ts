import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import { paths } from './paths';

/** Same digest as install.sh: sha256 of the input files concatenated in order. */
function inputsHash(files: readonly string[]): string {
  const h = createHash('sha256');
  for (const f of files) h.update(fs.readFileSync(f));
  return h.digest('hex');
}

export function readTrim(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** True when the store's binary (its version is in its path) and the Kafka jars matching their pom are present. */
export function isInstalled(): boolean {
  try {
    if (!fs.existsSync(paths.storeBin)) return false;
    if (!fs.readdirSync(paths.kafkaLibs).some((f) => /^kafka_2\.13-.*\.jar$/.test(f))) return false;
    return readTrim(paths.kafkaStamp) === inputsHash([paths.kafkaPom]);
  } catch {
    return false;
  }
}

let installing: Promise<void> | undefined;

/**
 * Runs deploy/local/install.sh (stdio inherited, so build progress shows) when the binaries are
 * missing or stale. The store's first build on a machine takes about six minutes; afterwards this
 * is a no-op.
 */
export function ensureInstalled(): Promise<void> {
  if (isInstalled()) return Promise.resolve();
  installing ??= new Promise<void>((resolve, reject) => {
    const child = spawn('bash', [paths.installScript], { stdio: 'inherit' });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`${paths.installScript} failed (${signal ?? `exit ${code}`})`));
    });
  }).finally(() => {
    installing = undefined;
  });
  return installing;
}
