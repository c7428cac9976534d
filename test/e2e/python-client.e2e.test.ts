import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { call, startSystem, tenantWithKey, type System } from '../harness/system';

// A Python client generated from the served OpenAPI document by openapi-python-client (PyPI, installed
// by scripts/install-python-client.sh) drives the CRM flow (sdk/python/crm_flow.py) against the real
// system: the document serves other languages as it is.

const ROOT = path.resolve(__dirname, '../..');
const VENV = path.join(ROOT, '.tools/python-client');

describe('a Python client generated from the served OpenAPI document', () => {
  let sys: System;
  let gw: string;
  let dir: string;

  beforeAll(async () => {
    sys = await startSystem({ without: ['telephony'] });
    gw = sys.gateways[0]!.url;
    dir = mkdtempSync(path.join(tmpdir(), 'python-client-'));
  });
  afterAll(async () => {
    await sys?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('is generated and drives the CRM flow', async () => {
    const installed = spawnSync('bash', [path.join(ROOT, 'scripts/install-python-client.sh')], { encoding: 'utf8' });
    expect({ status: installed.status, stderr: installed.stderr }).toEqual({ status: 0, stderr: '' });
    const doc = path.join(dir, 'openapi.json');
    writeFileSync(doc, JSON.stringify((await call(`${gw}/api/v1/openapi.json`)).body));
    const generated = spawnSync(
      path.join(VENV, 'bin/openapi-python-client'),
      ['generate', '--path', doc, '--meta', 'none', '--output-path', path.join(dir, 'voiceapi_client')],
      { encoding: 'utf8', cwd: dir },
    );
    expect({
      status: generated.status,
      output: generated.status === 0 ? '' : generated.stdout + generated.stderr,
    }).toEqual({ status: 0, output: '' });

    const t = await tenantWithKey(gw, { rateLimitPerSecond: 1_000 });
    const admin = (p: string, body?: unknown, method?: string) =>
      call(`${gw}/admin/v1${p}`, { admin: true, ...(body !== undefined && { body }), ...(method && { method }) });
    expect((await admin(`/tenants/${t.tenantId}/credits`, { amount: 5_000 })).status).toBe(201);
    const c = await admin(`/tenants/${t.tenantId}/campaigns`, {
      name: 'python',
      callingWindow: { start: '00:00', end: '24:00' },
      maxCallSeconds: 120,
    });
    expect(
      (await admin(`/tenants/${t.tenantId}/campaigns/${c.body.campaign.id}/start`, undefined, 'POST')).status,
    ).toBe(200);

    const run = spawnSync(
      path.join(VENV, 'bin/python'),
      [path.join(ROOT, 'sdk/python/crm_flow.py'), gw, t.key, c.body.campaign.id],
      { encoding: 'utf8', env: { ...process.env, PYTHONPATH: dir } },
    );
    expect({ status: run.status, stderr: run.stderr }).toEqual({ status: 0, stderr: '' });
    expect(JSON.parse(run.stdout)).toEqual({
      mode: 'live',
      accepted: 2,
      refusals: ['py-3: consent_required'],
      duplicates: 2,
      contacts: ['py-1: queued', 'py-2: queued'],
      balance: 5_000,
      missingCampaign: 'not_found',
    });
  }, 240_000);
});
