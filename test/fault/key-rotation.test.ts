import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Receiver } from '../../services/webhooks/test/receiver';
import { call, startSystem, tenantWithKey, type System } from '../harness/system';
import { eventually } from '../harness/wait';

// The runbook in docs/operations.md, played through: AGENT_SECRETS_KEY and WEBHOOK_SECRETS_KEY are
// rotated (new key, old key kept as previous), the re-seal pass moves every stored secret onto the
// new key, and the old key is removed; tenants' custom-API secrets and webhook signing secrets
// work throughout.

type Json = Record<string, any>;
const key = () => randomBytes(32).toString('base64url');
const BEARER = 'clinic-bearer-rotation-secret';

describe('rotating the keys that seal stored secrets', () => {
  const receiver = new Receiver();
  let crm: Server;
  let crmBase: string;
  const seenAuth: (string | undefined)[] = [];
  let sys: System;
  let gw: string;
  const [agentsOld, agentsNew, hooksOld, hooksNew] = [key(), key(), key(), key()];
  jest.setTimeout(180_000);

  beforeAll(async () => {
    await receiver.start();
    crm = createServer((req, res) => {
      seenAuth.push(req.headers.authorization);
      req.resume();
      req.on('end', () => {
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ found: false }));
      });
    });
    await new Promise<void>((r) => crm.listen(0, '127.0.0.1', r));
    crmBase = `http://127.0.0.1:${(crm.address() as AddressInfo).port}`;
    sys = await startSystem({
      serviceEnv: {
        agents: { AGENT_SECRETS_KEY: agentsOld, OUTBOUND_ALLOWLIST: crmBase.replace('http://', ''), LOG_LEVEL: 'info' },
        webhooks: {
          WEBHOOK_SECRETS_KEY: hooksOld,
          OUTBOUND_ALLOWLIST: receiver.hostPort,
          WEBHOOK_SWEEP_INTERVAL_MS: '200',
          LOG_LEVEL: 'info',
        },
      },
    });
    gw = sys.gateways[0]!.url;
  });
  afterAll(async () => {
    await sys?.stop();
    await receiver.stop();
    crm.closeAllConnections();
    await new Promise((r) => crm.close(r));
  });

  const admin = (path: string, body?: unknown, method?: string) =>
    call(`${gw}/admin/v1${path}`, { admin: true, ...(body !== undefined && { body }), ...(method && { method }) });
  const api = (k: string, path: string, body?: unknown, method?: string) =>
    call(`${gw}/api/v1${path}`, { key: k, ...(body !== undefined && { body }), ...(method && { method }) });
  async function restart(name: 'agents' | 'webhooks', env: Record<string, string>) {
    await sys.services[name]!.stop();
    return sys.startService(name, env);
  }

  it('keeps custom-API and webhook signing secrets usable across a rotation, then without the old key', async () => {
    const t = await tenantWithKey(gw, {
      scopes: ['inbound:read', 'inbound:write', 'companies:write'],
      rateLimitPerSecond: 1_000,
    });
    const phoneNumber = `+1628557${1000 + Math.floor(Math.random() * 8000)}`;
    expect((await admin(`/tenants/${t.tenantId}/numbers`, { phoneNumber, countryIso: 'US' })).status).toBe(201);
    const agent = (
      await api(t.key, '/inbound-agents', {
        name: 'Desk',
        phoneNumber,
        customApiBaseUrl: crmBase,
        customApiSecret: BEARER,
      })
    ).body.agent as Json;
    const lookup = async () => {
      seenAuth.length = 0;
      const r = await api(t.key, `/inbound-agents/${agent.id}/crm/lookup`, { phone: '+14155550100' });
      return [r.status, seenAuth[0]];
    };
    expect(await lookup()).toEqual([200, `Bearer ${BEARER}`]);

    const path = `/hooks/${randomBytes(4).toString('hex')}`;
    const hook = await admin(`/tenants/${t.tenantId}/webhooks`, {
      url: `${receiver.base}${path}`,
      events: ['contact.status_changed'],
    });
    receiver.secrets.set(path, [hook.body.webhook.secret]);
    const sandbox = (
      await admin(`/tenants/${t.tenantId}/api-keys`, { name: 'sandbox', mode: 'sandbox', rateLimitPerSecond: 1_000 })
    ).body.key as string;
    const campaign = (await admin(`/tenants/${t.tenantId}/campaigns`, { name: 'rotation' })).body.campaign.id as string;
    expect((await admin(`/tenants/${t.tenantId}/campaigns/${campaign}/start`, undefined, 'POST')).status).toBe(200);
    let n = 0;
    /** One signed delivery, verified by the receiver with the endpoint's secret. */
    const delivered = async () => {
      const lead = await api(sandbox, '/leads', {
        campaignId: campaign,
        phone: `+1415444${1000 + ++n}`,
        channel: 'call',
        consent: { outboundCall: true },
      });
      expect(
        (await call(`${gw}/api/v1/contacts/${lead.body.contactId}/cancel`, { key: sandbox, method: 'POST' })).status,
      ).toBe(200);
      const got = await eventually(
        'the delivery',
        () => receiver.at(path).find((r) => r.body.includes(lead.body.contactId)),
        30_000,
        { intervalMs: 150 },
      );
      return got.verifiedBy;
    };
    expect(await delivered()).toEqual([0]);

    // 1. The new key seals, the old one still opens; the pass moves every stored secret.
    const agents = await restart('agents', { AGENT_SECRETS_KEY: agentsNew, AGENT_SECRETS_PREVIOUS_KEYS: agentsOld });
    const webhooks = await restart('webhooks', {
      WEBHOOK_SECRETS_KEY: hooksNew,
      WEBHOOK_SECRETS_PREVIOUS_KEYS: hooksOld,
    });
    await eventually('the agents pass', () => /"moved":1,"unreadable":0.*sealed again/.test(agents.output()), 30_000, {
      intervalMs: 150,
    });
    await eventually(
      'the webhooks pass',
      () => /"moved":1,"unreadable":0.*sealed again/.test(webhooks.output()),
      30_000,
      { intervalMs: 150 },
    );
    expect(await lookup()).toEqual([200, `Bearer ${BEARER}`]);
    expect(await delivered()).toEqual([0]);

    // 2. The old key removed: what was moved still opens.
    await restart('agents', { AGENT_SECRETS_KEY: agentsNew });
    await restart('webhooks', { WEBHOOK_SECRETS_KEY: hooksNew });
    expect(await lookup()).toEqual([200, `Bearer ${BEARER}`]);
    expect(await delivered()).toEqual([0]);
    // A secret set after the rotation is sealed by the new key.
    expect((await api(t.key, `/inbound-agents/${agent.id}`, { customApiSecret: `${BEARER}-2` }, 'PATCH')).status).toBe(
      200,
    );
    expect(await lookup()).toEqual([200, `Bearer ${BEARER}-2`]);
  });
});
