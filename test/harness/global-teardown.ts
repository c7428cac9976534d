import { rmSync } from 'node:fs';
import { leftOpen } from './open-handles';
import { queryCheckFindings } from './query-check';

/**
 * Stops servers the harness started itself (nothing when they came from the environment), then
 * fails the run when a process sent a query no store declared or one the store answered with a
 * collection scan (kit query-check.ts), or when a test left a server, process or connection open
 * (open-handles.ts; in band, they would keep jest from ever exiting).
 */
export default async function globalTeardown(): Promise<void> {
  await globalThis.__voiceapiInfra?.stop();
  globalThis.__voiceapiInfra = undefined;
  const failures: string[] = [];
  const dir = process.env.STORE_QUERY_CHECK_DIR;
  if (dir) {
    const { checked, problems } = queryCheckFindings(dir);
    rmSync(dir, { recursive: true, force: true });
    process.stderr.write(
      `[query check] ${checked} query shapes sent by the processes under test, ${problems.length} without an index or a declaration\n`,
    );
    if (problems.length > 0)
      failures.push(`queries the stores did not declare, or that scan a collection:\n${problems.join('\n')}`);
  }
  const open = await leftOpen();
  process.stderr.write(`[open handles] ${open.length} left open by the tests\n`);
  if (open.length > 0) failures.push(`left open by the tests (stop them in afterAll):\n${open.join('\n')}`);
  if (failures.length > 0) throw new Error(failures.join('\n\n'));
}
