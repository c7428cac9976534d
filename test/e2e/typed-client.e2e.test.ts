import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { call, startSystem, tenantWithKey, type System } from '../harness/system';

// The served OpenAPI document as SDK generators meet it: openapi-typescript generates the types,
// test/typed-client/flow.ts (a tenant flow written with openapi-fetch) typechecks against them,
// then runs against the real gateway. A document an SDK generator refuses, or types that no
// longer describe the API, fail here.

const DIR = path.resolve(__dirname, '../typed-client');

describe('a typed client generated from the served OpenAPI document', () => {
  let sys: System;
  let gw: string;

  beforeAll(async () => {
    sys = await startSystem();
    gw = sys.gateways[0]!.url;
  });
  afterAll(() => sys?.stop());

  it('is generated, typechecks a tenant flow, and runs it', async () => {
    const res = await fetch(`${gw}/api/v1/openapi.json`);
    expect(res.status).toBe(200);
    const doc: unknown = await res.json();

    // openapi-typescript's own command (it refuses a document whose references do not resolve).
    mkdirSync(path.join(DIR, 'generated'), { recursive: true });
    const served = path.join(DIR, 'generated', 'openapi.json');
    const types = path.join(DIR, 'generated', 'api.ts');
    writeFileSync(served, JSON.stringify(doc));
    const generator = spawnSync(process.execPath, [path.resolve(__dirname, '../../node_modules/openapi-typescript/bin/cli.js'), served, '-o', types], { encoding: 'utf8' });
    expect({ status: generator.status, errors: generator.stderr.split('\n').filter((l) => /error/i.test(l)) }).toEqual({ status: 0, errors: [] });
    expect(readFileSync(types, 'utf8')).toContain('"/api/v1/companies"');

    const tsc = spawnSync(process.execPath, [require.resolve('typescript/bin/tsc'), '-p', path.join(DIR, 'tsconfig.json')], { encoding: 'utf8' });
    expect({ status: tsc.status, output: tsc.stdout + tsc.stderr }).toEqual({ status: 0, output: '' });

    const { tenantId, key } = await tenantWithKey(gw, { scopes: ['companies:read', 'companies:write', 'credits:read', 'calls:read'] });
    expect((await call(`${gw}/admin/v1/tenants/${tenantId}/credits`, { admin: true, body: { amount: 7 } })).status).toBe(201);
    // Required only now: its types exist once generated (test/tsconfig.json leaves the folder out).
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- see above: a static import would not compile before generation
    const { tenantFlow } = require('../typed-client/flow') as { tenantFlow: (baseUrl: string, apiKey: string) => Promise<{ companyId: string }> };
    const result = await tenantFlow(gw, key);
    expect(result).toEqual({
      companyId: expect.any(String),
      listed: [result.companyId],
      renamedTo: 'Typed Clinic GmbH',
      balance: 7,
      inboundCalls: 0,
      refused: { status: 400, reasonCode: 'validation_error' },
    });
  });
});
