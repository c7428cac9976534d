import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../harness/processes';
import { call, startSystem, tenantWithKey, type System } from '../harness/system';

const SCHEMATHESIS = path.join(ROOT, '.tools/schemathesis/bin/schemathesis');
const HTTP_METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

// Property-based requests generated from the published OpenAPI document (schemathesis), against
// the real gateway and services: no 500s, only documented status codes, answers that
// match their schemas, bad input refused. Every check runs (schemathesis.toml; a check chosen on
// the command line would override its per-operation settings) but positive_data_acceptance, because some
// rules cannot be written in JSON Schema (IANA time zones, the 8 KiB bound on businessHours)
// and the stateful phase reuses Idempotency-Keys on purpose. schemathesis.toml turns one check
// off for one operation, and says why.
describe('API fuzzing from the OpenAPI document', () => {
  let sys: System;

  beforeAll(async () => {
    if (!existsSync(SCHEMATHESIS))
      throw new Error('schemathesis is not installed: run scripts/install-schemathesis.sh (make test does)');
    sys = await startSystem({ gatewayEnv: { RATE_LIMIT_PER_SECOND: '100000' } });
  });
  afterAll(() => sys.stop());

  it('finds no server error, undocumented status or schema violation', async () => {
    const gw = sys.gateways[0]!.url;
    // Every scope an operation of the document needs, so each is reached past the scope check.
    const { key } = await tenantWithKey(gw, {
      scopes: ['companies:read', 'companies:write', 'credits:read', 'leads:read', 'leads:write'],
    });
    // Every operation the published document lists must be tested: count them from it.
    const doc = (await call(`${gw}/api/v1/openapi.json`)).body as { paths: Record<string, Record<string, unknown>> };
    const operations = Object.values(doc.paths).reduce(
      (n, item) => n + Object.keys(item).filter((k) => HTTP_METHODS.has(k)).length,
      0,
    );
    expect(operations).toBeGreaterThan(0);
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/api/v1/credits', '/api/v1/credits/transactions']));
    const args = [
      '--config-file',
      path.join(__dirname, 'schemathesis.toml'),
      'run',
      `${gw}/api/v1/openapi.json`,
      '--header',
      `Authorization: Bearer ${key}`,
      '--max-examples',
      '40',
      '--seed',
      '20261121',
      '--workers',
      '1',
      '--no-color',
    ];
    const { code, output } = await new Promise<{ code: number | null; output: string }>((resolve) => {
      const child = spawn(SCHEMATHESIS, args, {
        cwd: path.join(ROOT, '.tools'),
        env: { ...process.env, SCHEMATHESIS_TELEMETRY: 'false' },
      });
      let out = '';
      child.stdout.on('data', (b: Buffer) => (out += b.toString()));
      child.stderr.on('data', (b: Buffer) => (out += b.toString()));
      child.once('exit', (c) => resolve({ code: c, output: out }));
    });
    if (code !== 0) throw new Error(`schemathesis found problems (exit ${code}):\n${output.slice(-6_000)}`);
    expect(output).toMatch(/passed/);
    expect(output).toMatch(new RegExp(`Tested: ${operations}\\b`));
  }, 240_000);
});
