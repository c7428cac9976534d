/**
 * `make sdk`: the tenant API's OpenAPI document, as the gateway serves it, into the TypeScript SDK
 * (`sdk/typescript/openapi.json`) and its types (`src/generated/api.ts`, by openapi-typescript).
 * The document comes from the gateway's own route definitions (an app built without backends: the
 * document needs none); test/e2e/sdk.e2e.test.ts checks it is what a running gateway serves.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { createLogger } from '@voiceapi/kit';
import { buildApp, type AppDeps } from '../../gateway/src/app';

const ROOT = path.resolve(__dirname, '../..');
const SDK = path.join(ROOT, 'sdk/typescript');

/** Only what building the routes touches; every handler would need the real ones, and none runs here. */
const noBackends = {} as never;

async function main(): Promise<void> {
  const deps: AppDeps = {
    cfg: { ADMIN_TOKEN: 'unused', KEY_HASH_PEPPER: 'unused', RATE_LIMIT_PER_SECOND: 1, BODY_LIMIT_BYTES: 100 * 1024, RESPONSE_SCHEMA_CHECK: false },
    log: createLogger('sdk-generate', 'silent'),
    killSwitch: () => false,
    ready: () => true,
    keys: noBackends,
    onKeyUsed: () => undefined,
    idempotency: noBackends,
    operator: noBackends,
    clients: noBackends,
    streams: noBackends,
  };
  const server = buildApp(deps).listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  try {
    const res = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/openapi.json`);
    if (!res.ok) throw new Error(`the document answered ${res.status}`);
    writeFileSync(path.join(SDK, 'openapi.json'), `${JSON.stringify(await res.json(), null, 2)}\n`);
  } finally {
    server.close();
  }
  const types = execFileSync(process.execPath, [path.join(ROOT, 'node_modules/openapi-typescript/bin/cli.js'), path.join(SDK, 'openapi.json')], { encoding: 'utf8' });
  writeFileSync(path.join(SDK, 'src/generated/api.ts'), types);
  process.stdout.write('sdk/typescript: openapi.json and src/generated/api.ts written\n');
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
