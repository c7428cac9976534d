/**
 * The tenant API's OpenAPI document exactly as the gateway serves it, from the gateway's own route
 * definitions (an app built without backends: the document needs none). Used by `make sdk`, by
 * `make contracts-check` and by `make release`; test/e2e/sdk.e2e.test.ts checks a running gateway
 * serves the same.
 */
import type { AddressInfo } from 'node:net';
import { createLogger } from '@voiceapi/kit/service';
import { buildApp, type AppDeps } from '../services/gateway/src/app';

/** Only what building the routes touches; every handler would need the real ones, and none runs here. */
const noBackends = {} as never;

export async function servedDocument(): Promise<Record<string, any>> {
  const deps: AppDeps = {
    cfg: {
      ADMIN_TOKEN: 'unused',
      KEY_HASH_PEPPER: 'unused',
      RATE_LIMIT_PER_SECOND: 1,
      BODY_LIMIT_BYTES: 100 * 1024,
      RESPONSE_SCHEMA_CHECK: false,
    },
    log: createLogger('served-document', 'silent'),
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
    return (await res.json()) as Record<string, any>;
  } finally {
    server.close();
  }
}
