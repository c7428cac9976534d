import { rmSync } from 'node:fs';
import { queryCheckFindings } from './query-check';

/**
 * Stops servers the harness started itself (nothing when they came from the environment), then
 * fails the run when a process sent a query no store declared or one the store answered with a
 * collection scan (kit query-check.ts).
 */
export default async function globalTeardown(): Promise<void> {
  await globalThis.__voiceapiInfra?.stop();
  globalThis.__voiceapiInfra = undefined;
  const dir = process.env.STORE_QUERY_CHECK_DIR;
  if (!dir) return;
  const { checked, problems } = queryCheckFindings(dir);
  rmSync(dir, { recursive: true, force: true });
  process.stderr.write(`[query check] ${checked} query shapes sent by the processes under test, ${problems.length} without an index or a declaration\n`);
  if (problems.length > 0) throw new Error(`queries the stores did not declare, or that scan a collection:\n${problems.join('\n')}`);
}
