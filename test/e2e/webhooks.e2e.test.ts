// Over 300 lines because its cases share one started system (a few seconds to start per file); split by area only where that cost pays.
import { randomBytes } from 'node:crypto';
import { Receiver } from '../../services/webhooks/test/receiver';
import { call, startSystem, tenantWithKey, type CallResult, type System } from '../harness/system';
import { eventually } from '../harness/wait';

// Webhooks through the real gateway and every service: an operator registers an endpoint, a lead
// becomes a call, billing posts its charge, and a real local HTTP server receives the billed call,
// the credit usage and the contact's status changes, verified with the Standard Webhooks library
// (../shared/guide/operator-api.md "webhooks"; ../shared/guide/api-decisions.md "Billing semantics",
// "Sandbox and live keys see one tenant").

type Json = Record<string, any>;

describe('tenant webhooks through the gateway', () => {
  const receiver = new Receiver();
  let sys: System;
  let gw: string;
  jest.setTimeout(120_000);

  beforeAll(async () => {
    await receiver.start();
    sys = await startSystem({
      serviceEnv: {
        telephony: { CARRIER_SIMULATOR_SPEEDUP: '200' },
        leads: { CALLING_WINDOW_DEFAULT: 'always', SCHEDULER_INTERVAL_MS: '200' },
        // One attempt at a time per endpoint: deliveries are received in the order they are sent.
        webhooks: {
          OUTBOUND_ALLOWLIST: receiver.hostPort,
          WEBHOOK_RETRY_SCHEDULE: '0,300ms,1s',
          WEBHOOK_SWEEP_INTERVAL_MS: '200',
          WEBHOOK_ENDPOINT_CONCURRENCY: '1',
        },
      },
    });
    gw = sys.gateways[0]!.url;
  });
  afterAll(async () => {
    await sys?.stop();
    await receiver.stop();
  });

  const admin = (path: string, body?: unknown, method?: string) =>
    call(`${gw}/admin/v1${path}`, { admin: true, ...(body !== undefined && { body }), ...(method && { method }) });
  const api = (key: string, path: string, body?: unknown) =>
    call(`${gw}/api/v1${path}`, { key, ...(body !== undefined && { body }) });
  const register = async (tenantId: string, events?: string[]) => {
    const path = `/hooks/${randomBytes(4).toString('hex')}`;
    const r = await admin(`/tenants/${tenantId}/webhooks`, {
      url: `${receiver.base}${path}`,
      ...(events && { events }),
    });
    expect(r.status).toBe(201);
    receiver.secrets.set(path, [r.body.webhook.secret]);
    return { id: r.body.webhook.id as string, path, secret: r.body.webhook.secret as string, body: r.body };
  };
  const received = (path: string) =>
    receiver
      .at(path)
      .map((r) => ({ ...r, json: JSON.parse(r.body) as { type: string; timestamp: string; data: Json } }));
  const lead = async (key: string, campaignId: string, phone: string) => {
    const r = await api(key, '/leads', {
      campaignId,
      phone,
      name: 'Ada',
      channel: 'call',
      consent: { outboundCall: true, capturedAt: new Date(Date.now() - 60_000).toISOString(), source: 'web form' },
    });
    expect(r.status).toBe(202);
    return r.body.contactId as string;
  };

  it('registers endpoints as the operator contract says, refusing unsafe addresses', async () => {
    const t = await tenantWithKey(gw);
    const { body } = await register(t.tenantId);
    expect(body).toEqual({
      webhook: {
        id: expect.stringMatching(/^ep_/),
        url: expect.stringContaining(receiver.base),
        events: [
          'call.outbound.billed',
          'call.inbound.billed',
          'credits.usage',
          'contact.status_changed',
          'agent.script_ready',
        ],
        status: 'enabled',
        createdAt: expect.any(String),
        secret: expect.stringMatching(/^whsec_/),
      },
    });
    const list = await admin(`/tenants/${t.tenantId}/webhooks`);
    expect(list.status).toBe(200);
    expect(list.body.webhooks).toEqual([
      {
        id: body.webhook.id,
        url: body.webhook.url,
        events: body.webhook.events,
        status: 'enabled',
        createdAt: body.webhook.createdAt,
      },
    ]);
    for (const url of [
      'http://169.254.169.254/latest/meta-data/',
      'http://example.com/hook',
      'https://127.0.0.1:9/hook',
    ]) {
      const r = await admin(`/tenants/${t.tenantId}/webhooks`, { url });
      expect({ url, status: r.status, code: r.body.reasonCode }).toEqual({ url, status: 422, code: 'url_not_allowed' });
    }
    expect(
      (await admin(`/tenants/${t.tenantId}/webhooks`, { url: 'https://example.com/h', events: ['call.billed'] }))
        .status,
    ).toBe(400);
    expect(
      (await admin(`/tenants/${t.tenantId}/webhooks`, { url: 'https://example.com/h', secret: 'mine' })).status,
    ).toBe(400);
    expect((await admin('/tenants/665f1c2b9d3e4a0012345678/webhooks', { url: 'https://example.com/h' })).status).toBe(
      404,
    );
    expect((await admin('/webhooks/ep_AAAAAAAAAAAAAAAA/deliveries')).status).toBe(404);
    expect((await admin('/webhooks/not-an-id/deliveries')).status).toBe(400);
    const rotated = await admin(`/webhooks/${body.webhook.id}/rotate-secret`, undefined, 'POST');
    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({ webhook: { id: body.webhook.id, secret: expect.stringMatching(/^whsec_/) } });
    expect(rotated.body.webhook.secret).not.toBe(body.webhook.secret);
  });

  it('a billed call reaches the tenant’s endpoint, signed, paired with the ledger', async () => {
    const t = await tenantWithKey(gw, {
      scopes: ['calls:read', 'credits:read', 'leads:write', 'leads:read'],
      rateLimitPerSecond: 1_000,
    });
    expect((await admin(`/tenants/${t.tenantId}/credits`, { amount: 1_000 })).status).toBe(201);
    const hook = await register(t.tenantId);
    const c = await admin(`/tenants/${t.tenantId}/campaigns`, {
      name: `c ${randomBytes(2).toString('hex')}`,
      maxCallSeconds: 300,
    });
    expect(
      (await admin(`/tenants/${t.tenantId}/campaigns/${c.body.campaign.id}/start`, undefined, 'POST')).status,
    ).toBe(200);
    const contactId = await lead(t.key, c.body.campaign.id, `+1415${200 + Math.floor(Math.random() * 700)}0000`);

    const billed = await eventually(
      'call.outbound.billed',
      () => received(hook.path).find((r) => r.json.type === 'call.outbound.billed'),
      45_000,
      { intervalMs: 150 },
    );
    const usage = await eventually(
      'credits.usage',
      () => received(hook.path).find((r) => r.json.type === 'credits.usage'),
      45_000,
      { intervalMs: 150 },
    );
    await eventually(
      'completed status',
      () =>
        received(hook.path).find((r) => r.json.type === 'contact.status_changed' && r.json.data.status === 'completed'),
      45_000,
      { intervalMs: 150 },
    );
    expect(received(hook.path).every((r) => r.verifiedBy.length === 1)).toBe(true);

    const calls: CallResult = await api(t.key, `/contacts/${contactId}/calls`);
    const summary = calls.body.calls[0];
    expect(billed.json.data).toEqual({
      callId: summary.id,
      direction: 'outbound',
      contactId,
      campaignId: c.body.campaign.id,
      agentId: null,
      fromNumber: '+18885550100',
      billingStatus: 'charged',
      creditsCharged: 2,
      balanceAfter: 998,
      transactionId: expect.any(String),
      durationSeconds: 42,
      endedAt: expect.any(String),
      sandbox: false,
    });
    const rows = (await api(t.key, '/credits/transactions?type=call_deduction')).body.transactions;
    expect(rows).toEqual([
      expect.objectContaining({
        id: billed.json.data.transactionId,
        callId: summary.id,
        amount: -2,
        balanceAfter: 998,
      }),
    ]);
    expect(usage.json.data).toMatchObject({
      transactionId: billed.json.data.transactionId,
      type: 'call_deduction',
      credits: 2,
      balanceAfter: 998,
      callId: summary.id,
      direction: 'outbound',
      contactId,
      campaignId: c.body.campaign.id,
      agentId: null,
      sandbox: false,
    });
    const statuses = received(hook.path)
      .filter((r) => r.json.type === 'contact.status_changed')
      .map((r) => r.json.data);
    expect(statuses.every((s) => s.contactId === contactId && s.sandbox === false)).toBe(true);

    const deliveries = await admin(`/webhooks/${hook.id}/deliveries`);
    expect(deliveries.status).toBe(200);
    expect(deliveries.body.deliveries.length).toBeGreaterThanOrEqual(3);
    expect(deliveries.body.deliveries.find((d: Json) => d.eventId === billed.id)).toEqual({
      id: expect.stringMatching(/^dlv_/),
      eventId: billed.id,
      type: 'call.outbound.billed',
      attempts: 1,
      status: 'succeeded',
      lastStatusCode: 204,
      createdAt: expect.any(String),
    });
    // Nothing failed, so a recovery of the whole window queues nothing.
    const recover = await admin(`/webhooks/${hook.id}/recover`, {
      since: new Date(Date.now() - 3_600_000).toISOString(),
    });
    expect(recover).toMatchObject({ status: 202, body: { queued: 0 } });
    expect((await admin(`/webhooks/${hook.id}/recover`, { since: 'yesterday' })).status).toBe(400);
  });

  it('events a sandbox key caused carry sandbox: true', async () => {
    const live = await tenantWithKey(gw);
    const k = await admin(`/tenants/${live.tenantId}/api-keys`, {
      name: 'sandbox',
      mode: 'sandbox',
      rateLimitPerSecond: 1_000,
    });
    expect(k.status).toBe(201);
    const hook = await register(live.tenantId, ['contact.status_changed']);
    const c = await admin(`/tenants/${live.tenantId}/campaigns`, { name: 'sandbox c' });
    expect(
      (await admin(`/tenants/${live.tenantId}/campaigns/${c.body.campaign.id}/start`, undefined, 'POST')).status,
    ).toBe(200);
    const contactId = await lead(k.body.key, c.body.campaign.id, '+14152220000');
    // A sandbox contact is accepted and stays so until it is cancelled.
    expect((await call(`${gw}/api/v1/contacts/${contactId}/cancel`, { key: k.body.key, method: 'POST' })).status).toBe(
      200,
    );
    const got = await eventually('a status change', () => received(hook.path)[0], 45_000, { intervalMs: 150 });
    expect(got.json).toMatchObject({
      type: 'contact.status_changed',
      data: { contactId, status: 'cancelled', previousStatus: 'sandbox_accepted', sandbox: true },
    });
    expect(got.verifiedBy).toEqual([0]);
  });
  it('the operator changes, pauses, resumes and deletes an endpoint', async () => {
    const live = await tenantWithKey(gw);
    const k = await admin(`/tenants/${live.tenantId}/api-keys`, {
      name: 'sandbox',
      mode: 'sandbox',
      rateLimitPerSecond: 1_000,
    });
    const key = k.body.key as string;
    const hook = await register(live.tenantId, ['contact.status_changed']);
    const c = await admin(`/tenants/${live.tenantId}/campaigns`, { name: 'managed' });
    expect(
      (await admin(`/tenants/${live.tenantId}/campaigns/${c.body.campaign.id}/start`, undefined, 'POST')).status,
    ).toBe(200);
    let n = 0;
    /** One contact.status_changed event: a sandbox contact, cancelled. */
    const event = async () => {
      const contactId = await lead(key, c.body.campaign.id, `+1415333${String(1000 + ++n)}`);
      expect((await call(`${gw}/api/v1/contacts/${contactId}/cancel`, { key, method: 'POST' })).status).toBe(200);
      return contactId;
    };
    const patch = (body: Json, id = hook.id) => admin(`/webhooks/${id}`, body, 'PATCH');
    const deliveries = async () => (await admin(`/webhooks/${hook.id}/deliveries`)).body.deliveries as Json[];

    // Paused: events wait as pending deliveries, nothing is sent.
    const paused = await patch({ enabled: false });
    expect(paused).toMatchObject({
      status: 200,
      body: {
        webhook: {
          id: hook.id,
          url: expect.stringContaining(hook.path),
          events: ['contact.status_changed'],
          status: 'paused',
        },
      },
    });
    expect((await admin(`/tenants/${live.tenantId}/webhooks`)).body.webhooks[0].status).toBe('paused');
    const waiting: string[] = [];
    for (let i = 1; i <= 3; i++) {
      waiting.push(await event());
      await eventually(
        `${i} deliveries waiting`,
        async () => (await deliveries()).filter((d) => d.status === 'pending').length === i,
        45_000,
        { intervalMs: 150 },
      );
    }
    await new Promise((r) => setTimeout(r, 1_000));
    expect(received(hook.path)).toEqual([]);
    // Resumed: what waited goes out, oldest first.
    expect((await patch({ enabled: true })).body.webhook.status).toBe('enabled');
    await eventually('the waiting deliveries sent', () => received(hook.path).length === 3, 45_000, {
      intervalMs: 150,
    });
    const createdOrder = (await deliveries())
      .sort((a, b) => a.createdAt.localeCompare(b.createdAt))
      .map((d) => d.eventId);
    expect(received(hook.path).map((r) => r.id)).toEqual(createdOrder);
    expect(
      received(hook.path)
        .map((r) => r.json.data.contactId)
        .sort(),
    ).toEqual([...waiting].sort());

    // A new address, checked like a new one; events go there from now on.
    expect((await patch({ url: 'http://169.254.169.254/latest/meta-data/' })).body.reasonCode).toBe('url_not_allowed');
    expect((await patch({ events: ['call.billed'] })).status).toBe(400);
    expect((await patch({ secret: 'mine' })).status).toBe(400);
    const moved = `/hooks/${randomBytes(4).toString('hex')}`;
    receiver.secrets.set(moved, [hook.secret]);
    expect((await patch({ url: `${receiver.base}${moved}` })).body.webhook.url).toBe(`${receiver.base}${moved}`);
    const next = await event();
    await eventually(
      'delivered to the new address',
      () => received(moved).find((r) => r.json.data.contactId === next),
      45_000,
      { intervalMs: 150 },
    );
    expect(received(hook.path)).toHaveLength(3);
    // Other events only: a status change is not delivered.
    expect((await patch({ events: ['agent.script_ready'] })).body.webhook.events).toEqual(['agent.script_ready']);
    await event();
    await new Promise((r) => setTimeout(r, 1_500));
    expect(received(moved)).toHaveLength(1);

    // Deleted: 204, gone from the list, nothing delivered after the answer, the log still readable.
    expect((await patch({ events: [] })).body.webhook.events).toHaveLength(5);
    expect((await admin(`/webhooks/${hook.id}`, undefined, 'DELETE')).status).toBe(204);
    await event();
    await new Promise((r) => setTimeout(r, 1_500));
    expect(received(moved)).toHaveLength(1);
    expect((await admin(`/tenants/${live.tenantId}/webhooks`)).body.webhooks).toEqual([]);
    expect((await admin(`/webhooks/${hook.id}/deliveries`)).status).toBe(200);
    expect((await patch({ enabled: true })).status).toBe(404);
    expect((await admin(`/webhooks/${hook.id}`, undefined, 'DELETE')).status).toBe(404);
    expect((await admin(`/webhooks/${hook.id}/rotate-secret`, undefined, 'POST')).status).toBe(404);
  });
});
