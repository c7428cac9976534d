import * as path from 'node:path';

/** deploy/local (this file is compiled to deploy/local/dist/paths.js). */
const ROOT = path.resolve(__dirname, '..');
/** Where install.sh puts the binaries; keep the two in step. */
const BIN_DIR = path.join(ROOT, '.bin');

export const paths = {
  root: ROOT,
  installScript: path.join(ROOT, 'install.sh'),
  ferretBin: path.join(BIN_DIR, 'ferretdb'),
  ferretStamp: path.join(BIN_DIR, 'ferretdb.sha256'),
  ferretInputs: ['go.mod', 'go.sum', 'main.go'].map((f) => path.join(ROOT, 'ferretdb', f)),
  kafkaLibs: path.join(BIN_DIR, 'kafka-libs'),
  kafkaStamp: path.join(BIN_DIR, 'kafka-libs', '.pom.sha256'),
  kafkaPom: path.join(ROOT, 'kafka', 'pom.xml'),
  kafkaLog4j: path.join(ROOT, 'kafka', 'log4j.properties'),
} as const;

/** Receives every output line of the servers (prefixed with their name). */
export type LogFn = (line: string) => void;
