import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** deploy/local (this file is compiled to deploy/local/dist/paths.js). */
const ROOT = path.resolve(__dirname, '..');
/** Where install.sh puts the Kafka jars; keep the two in step. */
const BIN_DIR = path.join(ROOT, '.bin');
/** The store's pinned version (store/VERSION), also read by install.sh. */
const STORE_VERSION = fs.readFileSync(path.join(ROOT, 'store', 'VERSION'), 'utf8').trim();
/** Per-machine cache shared by every checkout (store/cache-dir.sh gives install.sh the same path). */
const CACHE_DIR =
  process.env.VOICEAPI_CACHE_DIR ||
  path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'voiceapi');

export const paths = {
  root: ROOT,
  installScript: path.join(ROOT, 'install.sh'),
  storeVersion: STORE_VERSION,
  storeBin: path.join(CACHE_DIR, `secantus-mdb-${STORE_VERSION}`, 'bin', 'secantusd-rs'),
  storeConfig: path.join(ROOT, 'store', 'secantusd.toml'),
  kafkaLibs: path.join(BIN_DIR, 'kafka-libs'),
  kafkaStamp: path.join(BIN_DIR, 'kafka-libs', '.pom.sha256'),
  kafkaPom: path.join(ROOT, 'kafka', 'pom.xml'),
  kafkaLog4j: path.join(ROOT, 'kafka', 'log4j.properties'),
} as const;

/** Receives every output line of the servers (prefixed with their name). */
export type LogFn = (line: string) => void;
