import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { provideInfra, type Infra, useInfra } from './infra';

declare global {
  var __voiceapiInfra: Infra | undefined;
}

/**
 * Starts (or finds) the real servers once; workers inherit their addresses through the
 * environment, and every process started under test checks the queries it sends
 * (STORE_QUERY_CHECK_DIR, read back by global-teardown.ts).
 */
export default async function globalSetup(): Promise<void> {
  if (globalThis.__voiceapiInfra) return;
  const started = Date.now();
  const infra = await provideInfra((line) => process.stderr.write(`[infra] ${line}\n`));
  globalThis.__voiceapiInfra = infra;
  useInfra(infra);
  // A fresh folder each run: findings of an earlier run never count in this one.
  process.env.STORE_QUERY_CHECK_DIR = mkdtempSync(path.join(tmpdir(), 'voiceapi-query-check-'));
  process.stderr.write(
    `\n[infra] MongoDB ${infra.mongoUrl}, Kafka ${infra.kafkaBrokers} and the object store ${infra.objectStoreEnv.OBJECT_STORE_ENDPOINT} from ${infra.source} (${Date.now() - started} ms)\n`,
  );
}
