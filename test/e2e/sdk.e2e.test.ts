import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { Webhook } from 'standardwebhooks';
import { VoiceApi, VoiceApiError, ok, paginate, verifyWebhook, type CallStreamEvent } from '@voiceapi/sdk';
import { quickstart } from '../../sdk/typescript/examples/quickstart';
import { call, startSystem, tenantWithKey, type System } from '../harness/system';

// The official TypeScript SDK (sdk/typescript) against the real processes: its types are the
// served document's (drift fails here), its README's quickstart runs as written, and a flow through
// every area a default key may use, with typed errors, pagination, retries and webhook checks.

const SDK = path.resolve(__dirname, '../../sdk/typescript');
const ALL_DAY = { start: '00:00', end: '24:00', days: ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] };

describe('the TypeScript SDK against the running system', () => {
  let sys: System;
  let gw: string;
  const admin = (p: string, body?: unknown, method?: string) =>
    call(`${gw}/admin/v1${p}`, { admin: true, ...(body !== undefined && { body }), ...(method && { method }) });
  async function runningCampaign(tenantId: string): Promise<string> {
    const c = await admin(`/tenants/${tenantId}/campaigns`, {
      name: 'sdk',
      callingWindow: ALL_DAY,
      maxCallSeconds: 120,
    });
    expect(c.status).toBe(201);
    expect((await admin(`/tenants/${tenantId}/campaigns/${c.body.campaign.id}/start`, undefined, 'POST')).status).toBe(
      200,
    );
    return c.body.campaign.id as string;
  }

  beforeAll(async () => {
    // Every service: the flow below reaches calls and numbers too (telephony dials the leads
    // meanwhile, a minute of call in 0.3 s, so a followed call ends within the test).
    sys = await startSystem({ serviceEnv: { telephony: { CARRIER_SIMULATOR_SPEEDUP: '200' } } });
    gw = sys.gateways[0]!.url;
  });
  afterAll(() => sys?.stop());

  it('is generated from the document the gateway serves: types and document match it (make sdk regenerates them)', async () => {
    const served = (await call(`${gw}/api/v1/openapi.json`)).body as object;
    const committed = JSON.parse(readFileSync(path.join(SDK, 'openapi.json'), 'utf8')) as object;
    expect(committed).toEqual(served);
    const generated = spawnSync(
      process.execPath,
      [path.resolve(__dirname, '../../node_modules/openapi-typescript/bin/cli.js'), path.join(SDK, 'openapi.json')],
      { encoding: 'utf8' },
    );
    expect(generated.status).toBe(0);
    expect(readFileSync(path.join(SDK, 'src/generated/api.ts'), 'utf8')).toBe(generated.stdout);
  });

  it("runs the README's quickstart as written", async () => {
    const readme = readFileSync(path.join(SDK, 'README.md'), 'utf8');
    expect(readme).toContain(readFileSync(path.join(SDK, 'examples/quickstart.ts'), 'utf8').trim());
    const t = await tenantWithKey(gw, { rateLimitPerSecond: 1_000 });
    expect((await admin(`/tenants/${t.tenantId}/credits`, { amount: 10_000 })).status).toBe(201);
    const campaignId = await runningCampaign(t.tenantId);
    expect(await quickstart({ baseUrl: gw, apiKey: t.key, campaignId })).toEqual({
      mode: 'live',
      accepted: 2,
      refusals: ['crm-1003: consent_required'],
      duplicates: 2,
      // Each contact's status as it is when listed: telephony may be dialling it already.
      contacts: [
        expect.stringMatching(/^crm-1001: (queued|dialing|in_call|completed|failed)$/),
        expect.stringMatching(/^crm-1002: (queued|dialing|in_call|completed|failed)$/),
      ],
      missingCampaign: '404 not_found',
    });
  });

  it('covers every area a default key may use, with typed errors, pagination and batches over 1,000', async () => {
    const t = await tenantWithKey(gw, { rateLimitPerSecond: 1_000 });
    expect((await admin(`/tenants/${t.tenantId}/credits`, { amount: 50_000 })).status).toBe(201);
    const campaignId = await runningCampaign(t.tenantId);
    const vapi = new VoiceApi({ apiKey: t.key, baseUrl: gw });

    expect((await ok(vapi.api.GET('/api/v1/ping'))).tenantId).toBe(t.tenantId);
    expect((await ok(vapi.api.GET('/api/v1/credits'))).balance).toBe(50_000);
    expect(
      (await ok(vapi.api.GET('/api/v1/credits/transactions', { params: { query: { type: 'top_up' } } }))).transactions
        .length,
    ).toBe(1);
    expect((await ok(vapi.api.GET('/api/v1/campaigns'))).campaigns.map((c) => c.id)).toEqual([campaignId]);

    // 1,200 leads: two batches, results numbered across them.
    const leads = Array.from({ length: 1_200 }, (_, i) => ({
      externalId: `sdk-${i}`,
      phone: `+1415777${String(i).padStart(4, '0')}`,
      channel: 'call' as const,
      consent: { outboundCall: true },
    }));
    const synced = await vapi.batchLeads({ campaignId, leads, idempotencyKey: 'sync-1' });
    expect({ accepted: synced.accepted, refused: synced.refused, last: synced.results.at(-1)?.index }).toEqual({
      accepted: 1_200,
      refused: 0,
      last: 1_199,
    });
    let listed = 0;
    for await (const c of paginate('contacts', (page) =>
      vapi.api.GET('/api/v1/campaigns/{id}/contacts', {
        params: { path: { id: campaignId }, query: { page, limit: 100 } },
      }),
    )) {
      expect(c.campaignId).toBe(campaignId);
      listed++;
    }
    expect(listed).toBe(1_200);

    const single = await ok(
      vapi.api.POST('/api/v1/leads', {
        body: { campaignId, phone: '+14157779999', channel: 'call', consent: { outboundCall: true } },
      }),
    );
    const contact = (await ok(vapi.api.GET('/api/v1/contacts/{id}', { params: { path: { id: single.contactId } } })))
      .contact;
    expect(contact.id).toBe(single.contactId);
    // 1,200 leads wait for the tenant's lines ahead of it: still queued, so it can be cancelled.
    expect(
      (await ok(vapi.api.POST('/api/v1/contacts/{id}/cancel', { params: { path: { id: contact.id } } }))).contact
        .status,
    ).toBe('cancelled');
    await ok(vapi.api.POST('/api/v1/event-routes', { body: { eventType: 'deal.won', campaignId } }));
    expect(
      (
        await ok(
          vapi.api.POST('/api/v1/events', {
            body: { eventType: 'deal.won', phone: '+14157779998', channel: 'call', consent: { outboundCall: true } },
          }),
        )
      ).status,
    ).toBe('accepted');
    expect((await ok(vapi.api.GET('/api/v1/event-routes'))).routes.map((r) => r.eventType)).toEqual(['deal.won']);
    expect((await ok(vapi.api.GET('/api/v1/omni/templates'))).templates).toEqual([]);
    // The calls telephony placed for these leads so far: each of this campaign.
    const placed = await ok(vapi.api.GET('/api/v1/calls', { params: { query: { limit: 100 } } }));
    expect(placed.calls.filter((c) => c.campaignId !== campaignId)).toEqual([]);
    expect((await ok(vapi.api.GET('/api/v1/calls/active'))).calls.filter((c) => c.campaignId !== campaignId)).toEqual(
      [],
    );
    expect((await ok(vapi.api.GET('/api/v1/inbound-agents'))).agents).toEqual([]);
    expect((await ok(vapi.api.GET('/api/v1/numbers'))).numbers).toEqual([]);

    // On request: companies (the key above lacks them, and is told which scopes it misses below).
    const withCompanies = await tenantWithKey(gw, { scopes: ['companies:read', 'companies:write'] });
    const clinic = new VoiceApi({ apiKey: withCompanies.key, baseUrl: gw });
    const { company } = await ok(
      clinic.api.POST('/api/v1/companies', {
        body: { name: 'Typed Clinic', industry: 'Healthcare', timezone: 'Europe/Berlin' },
      }),
    );
    expect(
      (
        await ok(
          clinic.api.PATCH('/api/v1/companies/{id}', {
            params: { path: { id: company.id } },
            body: { name: 'Typed Clinic GmbH' },
          }),
        )
      ).company.name,
    ).toBe('Typed Clinic GmbH');
    expect(
      (await ok(clinic.api.GET('/api/v1/companies', { params: { query: { page: 1, limit: 10 } } }))).companies.map(
        (c) => c.id,
      ),
    ).toEqual([company.id]);
    // The types constrain the calls: a path parameter left out does not compile.
    // @ts-expect-error a path parameter is required: the generated types must say so
    await clinic.api.GET('/api/v1/companies/{id}', {}).catch(() => undefined);

    // A refusal is thrown typed, with what the API said.
    const refused = await vapi.api
      .POST('/api/v1/leads', { body: { campaignId, phone: '+1', channel: 'call', consent: { outboundCall: true } } })
      .catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(VoiceApiError);
    expect({
      status: (refused as VoiceApiError).status,
      reasonCode: (refused as VoiceApiError).reasonCode,
      path: (refused as VoiceApiError).details[0]?.path,
    }).toEqual({
      status: 400,
      reasonCode: 'validation_error',
      path: 'body.phone',
    });
    const forbidden = await vapi.api.GET('/api/v1/companies').catch((e: unknown) => e);
    expect({ status: (forbidden as VoiceApiError).status, missing: (forbidden as VoiceApiError).missing }).toEqual({
      status: 403,
      missing: ['companies:read'],
    });
  });

  it('waits out 429 as Retry-After says and sends a POST again under the same Idempotency-Key', async () => {
    const t = await tenantWithKey(gw, { rateLimitPerSecond: 1 });
    const campaignId = await runningCampaign(t.tenantId);
    expect((await admin(`/tenants/${t.tenantId}/credits`, { amount: 1_000 })).status).toBe(201);
    const sent: { key: string | null; status: number }[] = [];
    const vapi = new VoiceApi({
      apiKey: t.key,
      baseUrl: gw,
      fetch: async (request) => {
        const res = await fetch(request);
        sent.push({ key: request.headers.get('idempotency-key'), status: res.status });
        return res;
      },
    });
    const answers = [];
    for (let i = 0; i < 3; i++)
      answers.push(
        await ok(
          vapi.api.POST('/api/v1/leads', {
            body: { campaignId, phone: `+141577780${i}0`, channel: 'call', consent: { outboundCall: true } },
          }),
        ),
      );
    expect(answers.map((a) => a.status)).toEqual(['accepted', 'accepted', 'accepted']);
    expect(sent.some((s) => s.status === 429)).toBe(true);
    // Every try of one POST carried one key; three POSTs, three keys.
    expect(new Set(sent.map((s) => s.key)).size).toBe(3);
    expect(sent.every((s) => s.key !== null)).toBe(true);
  }, 30_000);

  it('follows calls live, and goes on after a stored event id without repeating one', async () => {
    const t = await tenantWithKey(gw, { rateLimitPerSecond: 1_000 });
    expect((await admin(`/tenants/${t.tenantId}/credits`, { amount: 10_000 })).status).toBe(201);
    const campaignId = await runningCampaign(t.tenantId);
    const vapi = new VoiceApi({ apiKey: t.key, baseUrl: gw });
    const stop = new AbortController();
    const seen: CallStreamEvent[] = [];
    const following = (async () => {
      for await (const e of vapi.followCalls({ signal: stop.signal, campaignId })) {
        seen.push(e);
        if (e.kind === 'call' && e.event === 'call.billed') return;
      }
    })();
    await new Promise((r) => setTimeout(r, 500));
    // …0000: the simulator answers and talks 42 s (0.2 s here).
    const { contactId } = await ok(
      vapi.api.POST('/api/v1/leads', {
        body: { campaignId, phone: '+14155770000', channel: 'call', consent: { outboundCall: true } },
      }),
    );
    await following;
    stop.abort();
    const calls = seen.filter((e): e is Extract<CallStreamEvent, { kind: 'call' }> => e.kind === 'call');
    expect(calls.map((e) => e.event)).toEqual([
      'call.started',
      'call.ringing',
      'call.answered',
      'call.ended',
      'call.billed',
    ]);
    expect(calls.every((e) => e.call.contactId === contactId)).toBe(true);
    expect(calls.at(-1)!.call.billingStatus).toBe('charged');

    // A consumer that stored the id of call.ringing goes on right after it.
    const resumed: string[] = [];
    const stop2 = new AbortController();
    for await (const e of vapi.followCalls({ signal: stop2.signal, lastEventId: calls[1]!.id })) {
      if (e.kind === 'call') resumed.push(e.event);
      if (resumed.length === 3) stop2.abort();
    }
    expect(resumed).toEqual(['call.answered', 'call.ended', 'call.billed']);
  }, 60_000);

  it('verifies a webhook delivery signed with the endpoint secret, and refuses a tampered one', () => {
    const secret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    const body = JSON.stringify({
      type: 'call.outbound.billed',
      timestamp: new Date().toISOString(),
      data: { callId: 'c1' },
    });
    const id = 'msg_1';
    const at = new Date();
    const headers = {
      'webhook-id': id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': new Webhook(secret).sign(id, at, body),
    };
    expect(verifyWebhook(body, headers, ['whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', secret]).data).toEqual({
      callId: 'c1',
    });
    expect(() => verifyWebhook(body.replace('c1', 'c2'), headers, secret)).toThrow();
  });
});
