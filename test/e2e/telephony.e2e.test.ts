// Over 300 lines because its cases share one started system (a few seconds to start per file); split by area only where that cost pays.
import { randomBytes } from 'node:crypto';
import { S3ObjectStore, type S3Settings } from '@voiceapi/kit/objects';
import { objectStoreSettings } from '../harness/infra';
import { call, startSystem, tenantWithKey, type CallResult, type System } from '../harness/system';
import { eventually } from '../harness/wait';

// Calls through the real gateway and the real telephony, leads and billing services: the unified
// feed and its filters, one call with its conversation, signed recordings, analytics, numbers,
// inbound simulation and the concurrency package (../shared/spec/tenant-api-spec.md "Unified call
// summary", "GET /api/v1/calls", "Call billing status"; ../shared/guide/api-decisions.md "Endpoint
// shapes", "Calls without an agent", "Billing semantics"; ../shared/guide/operator-api.md).

type Json = Record<string, any>;
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SUMMARY_FIELDS = [
  'id',
  'direction',
  'callId',
  'callSessionId',
  'callSid',
  'status',
  'outcome',
  'startedAt',
  'endedAt',
  'durationSeconds',
  'fromNumber',
  'toNumber',
  'agentId',
  'agentName',
  'campaignId',
  'contactId',
  'billingStatus',
  'creditsCharged',
  'creditsError',
  'balanceAfter',
  'hasTranscript',
  'hasAnalysis',
  'hasRecording',
  'summary',
].sort();
const ALL_SCOPES = [
  'calls:read',
  'credits:read',
  'leads:read',
  'leads:write',
  'inbound:read',
  'inbound:write',
  'analytics:read',
  'recordings:read',
];

describe('calls, recordings, analytics and numbers through the gateway', () => {
  let sys: System;
  let gw: string;
  let line = 0;
  /** A new San Francisco number whose last four digits pick the simulator's scenario. */
  const phone = (suffix4 = String(1000 + ((++line * 37) % 8000))) => `+1415${200 + (++line % 700)}${suffix4}`;

  beforeAll(async () => {
    sys = await startSystem({
      serviceEnv: {
        telephony: { CARRIER_SIMULATOR_SPEEDUP: '200' },
        leads: { CALLING_WINDOW_DEFAULT: 'always', SCHEDULER_INTERVAL_MS: '200' },
      },
    });
    gw = sys.gateways[0]!.url;
  });
  afterAll(() => sys.stop());

  const admin = (path: string, body?: unknown, method?: string) =>
    call(`${gw}/admin/v1${path}`, { admin: true, ...(body !== undefined && { body }), ...(method && { method }) });
  const api = (key: string, path: string, body?: unknown, method?: string) =>
    call(`${gw}/api/v1${path}`, { key, ...(body !== undefined && { body }), ...(method && { method }) });
  async function funded(credits = 10_000, scopes = ALL_SCOPES) {
    const t = await tenantWithKey(gw, { scopes, rateLimitPerSecond: 10_000 });
    expect((await admin(`/tenants/${t.tenantId}/credits`, { amount: credits })).status).toBe(201);
    return t;
  }
  async function campaign(tenantId: string, extra: Json = {}): Promise<string> {
    const c = await admin(`/tenants/${tenantId}/campaigns`, {
      name: `c ${randomBytes(2).toString('hex')}`,
      maxCallSeconds: 300,
      ...extra,
    });
    expect(c.status).toBe(201);
    expect((await admin(`/tenants/${tenantId}/campaigns/${c.body.campaign.id}/start`, undefined, 'POST')).status).toBe(
      200,
    );
    return c.body.campaign.id;
  }
  async function lead(key: string, campaignId: string, to: string): Promise<string> {
    const r = await api(key, '/leads', {
      campaignId,
      phone: to,
      name: 'Ada',
      channel: 'call',
      consent: { outboundCall: true, capturedAt: new Date(Date.now() - 60_000).toISOString(), source: 'web form' },
    });
    expect(r.status).toBe(202);
    return r.body.contactId;
  }
  /** The contact's one call, once billed. */
  async function billedCallOf(key: string, contactId: string): Promise<Json> {
    const r = await eventually('the call billed', () => api(key, `/contacts/${contactId}/calls`), 45_000, {
      done: (x) =>
        x.status === 200 && x.body.calls[0]?.billingStatus !== undefined && x.body.calls[0].billingStatus !== 'pending',
      intervalMs: 150,
    });
    return r.body.calls[0];
  }

  it('a lead becomes a call: the feed shows every field of the unified summary, billed from the ledger', async () => {
    const t = await funded(1_000);
    const c = await campaign(t.tenantId);
    const contactId = await lead(t.key, c, phone('0000'));
    const summary = await billedCallOf(t.key, contactId);
    expect(Object.keys(summary).sort()).toEqual(SUMMARY_FIELDS);
    expect(summary).toMatchObject({
      direction: 'outbound',
      status: 'completed',
      outcome: 'completed',
      durationSeconds: 42,
      campaignId: c,
      contactId,
      agentId: null,
      billingStatus: 'charged',
      creditsCharged: 2,
      creditsError: null,
      balanceAfter: 998,
      hasTranscript: true,
      hasAnalysis: true,
      hasRecording: true,
    });
    // Placed from a platform number: the campaign has none of its own.
    expect(summary.fromNumber).toBe('+18885550100');
    expect(summary.startedAt).toMatch(ISO);
    expect(summary.endedAt).toMatch(ISO);
    expect(summary.callId).toBe(summary.id);
    const feed = await api(t.key, '/calls');
    expect(feed.status).toBe(200);
    expect(feed.body).toEqual({
      calls: [summary],
      pagination: { page: 1, limit: 25, total: 1, totalPages: 1, hasMore: false },
    });
    // The ledger row carries the call; the wallet balances.
    const rows = await api(t.key, '/credits/transactions?type=call_deduction');
    expect(rows.body.transactions).toEqual([
      expect.objectContaining({ type: 'call_deduction', amount: -2, callId: summary.id, balanceAfter: 998 }),
    ]);
    expect((await api(t.key, '/credits')).body).toMatchObject({ balance: 998, held: 0, available: 998 });
    // One call of the contact, with its conversation; the contact's own check comes first.
    const one = await api(t.key, `/contacts/${contactId}/calls/${summary.id}`);
    expect(one.status).toBe(200);
    expect(one.body.call).toMatchObject({
      ...summary,
      analysis: expect.objectContaining({ summary: expect.any(String), sentiment: 'positive' }),
    });
    expect(one.body.call.transcript[0]).toEqual({
      role: 'agent',
      text: expect.any(String),
      at: expect.stringMatching(ISO),
    });
    const other = await funded(10);
    expect((await api(other.key, `/contacts/${contactId}/calls/${summary.id}`)).status).toBe(404);
    expect((await api(other.key, `/contacts/${contactId}/calls`)).status).toBe(404);
    expect((await api(other.key, '/calls')).body.calls).toEqual([]);
  });

  it('places a campaign’s calls from the tenant’s own number when the campaign names one', async () => {
    const t = await funded();
    const own = phone('7300');
    expect((await admin(`/tenants/${t.tenantId}/numbers`, { phoneNumber: own, countryIso: 'US' })).status).toBe(201);
    const notOwned = await admin(`/tenants/${t.tenantId}/campaigns`, { name: 'x', fromNumber: phone('7301') });
    expect([notOwned.status, notOwned.body.reasonCode, notOwned.body.details]).toEqual([
      422,
      'phone_not_owned',
      [{ path: 'body.fromNumber', message: 'not a number the tenant owns' }],
    ]);
    expect((await admin(`/tenants/${t.tenantId}/campaigns`, { name: 'x', fromNumber: '4155550100' })).status).toBe(400);
    const c = await campaign(t.tenantId, { fromNumber: own });
    expect((await api(t.key, `/campaigns/${c}`)).body.campaign.fromNumber).toBe(own);
    const contactId = await lead(t.key, c, phone('0000'));
    const billed = await billedCallOf(t.key, contactId);
    expect(billed).toMatchObject({ direction: 'outbound', fromNumber: own, contactId, campaignId: c });
    expect((await api(t.key, '/calls')).body.calls.find((x: Json) => x.id === billed.id).fromNumber).toBe(own);
  });

  it('shows the last call’s conversation on the contact, and erases the calls’ personal data with the contact', async () => {
    const t = await funded();
    const campaignId = await campaign(t.tenantId);
    const contactId = await lead(t.key, campaignId, phone('0000'));
    const unanswered = await lead(t.key, campaignId, phone('0001'));
    const summary = await billedCallOf(t.key, contactId);
    const contact = await eventually('the contact completed', () => api(t.key, `/contacts/${contactId}`), 45_000, {
      done: (r) => r.body.contact?.status === 'completed',
      intervalMs: 150,
    });
    expect(contact.body.contact).toMatchObject({
      lastCallId: summary.id,
      analysis: { sentiment: 'positive', optOut: false },
    });
    expect(contact.body.contact.conversation[0]).toEqual({
      role: 'agent',
      text: expect.any(String),
      at: expect.stringMatching(ISO),
    });
    // The campaign's list shows each contact as its detail does: conversation and analysis too.
    await billedCallOf(t.key, unanswered);
    const listed = (await api(t.key, `/campaigns/${campaignId}/contacts`)).body.contacts as Json[];
    expect(listed.find((c) => c.id === contactId)).toMatchObject({
      conversation: contact.body.contact.conversation,
      analysis: contact.body.contact.analysis,
    });
    expect(listed.find((c) => c.id === unanswered)).toMatchObject({ conversation: null, analysis: null });
    const recording = await api(t.key, `/calls/${summary.id}/recording`);
    expect(recording.status).toBe(200);
    const recordings = new S3ObjectStore({
      ...(objectStoreSettings() as unknown as S3Settings),
      OBJECT_STORE_FORCE_PATH_STYLE: true,
      OBJECT_STORE_BUCKET: 'voiceapi-recordings',
    });
    const key = `${t.tenantId}/${summary.id}.wav`;
    expect(await recordings.head(key)).toEqual({ contentType: 'audio/wav', sizeBytes: 44 + 42 * 16_000 });

    expect((await api(t.key, `/contacts/${contactId}`, undefined, 'DELETE')).status).toBe(204);
    expect((await api(t.key, `/contacts/${contactId}`)).status).toBe(404);
    // Telephony hears of it (leads' ContactDeleted): the call stays in the feed for billing and
    // analytics, without the number, summary or conversation.
    const erasedOf = (r: CallResult) => (r.body.calls as Json[] | undefined)?.find((c) => c.id === summary.id);
    const feed = await eventually('the call erased', () => api(t.key, '/calls'), 45_000, {
      done: (r) => erasedOf(r)?.toNumber === null,
      intervalMs: 150,
    });
    const erased = erasedOf(feed);
    expect(erased).toMatchObject({
      id: summary.id,
      durationSeconds: 42,
      billingStatus: 'charged',
      creditsCharged: 2,
      toNumber: null,
      summary: null,
      hasTranscript: false,
      hasAnalysis: false,
      hasRecording: false,
    });
    expect((await api(t.key, `/calls/${summary.id}/recording`)).status).toBe(404);
    // The audio itself is gone from the bucket, and the link given before stops working.
    expect(await recordings.head(key)).toBeNull();
    recordings.destroy();
    expect((await call(recording.body.url)).status).toBe(404);
  });

  it('filters the feed and refuses bad filters with the error body', async () => {
    const t = await funded();
    const [c1, c2] = [await campaign(t.tenantId), await campaign(t.tenantId)];
    const k1 = await lead(t.key, c1, phone('0000'));
    const k2 = await lead(t.key, c2, phone('0002'));
    await billedCallOf(t.key, k1);
    await billedCallOf(t.key, k2);
    const ids = async (q: string) => {
      const r = await api(t.key, `/calls${q}`);
      expect(r.status).toBe(200);
      return r.body.calls.map((x: Json) => x.contactId);
    };
    expect(await ids(`?campaignId=${c1}`)).toEqual([k1]);
    expect(await ids('?status=busy')).toEqual([k2]);
    expect(await ids('?direction=outbound')).toHaveLength(2);
    expect(await ids('?direction=inbound')).toEqual([]);
    expect(await ids(`?startedAfter=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).toEqual([]);
    expect(await ids(`?startedBefore=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).toHaveLength(
      2,
    );
    const paged = await api(t.key, '/calls?limit=1&page=2');
    expect(paged.body.pagination).toEqual({ page: 2, limit: 1, total: 2, totalPages: 2, hasMore: false });
    for (const bad of [
      '?direction=sideways',
      '?status[$ne]=x',
      '?campaignId[$gt]=',
      '?startedAfter=yesterday',
      `?startedAfter=${encodeURIComponent('2026-02-01T00:00:00Z')}&startedBefore=${encodeURIComponent('2026-01-01T00:00:00Z')}`,
      '?limit=101',
      '?page=0',
    ]) {
      const r = await api(t.key, `/calls${bad}`);
      expect([bad, r.status, r.body.reasonCode]).toEqual([bad, 400, 'validation_error']);
      expect(typeof r.body.error).toBe('string');
    }
    // Scope: calls:read.
    const noScope = await tenantWithKey(gw, { scopes: ['leads:read'] });
    expect(await api(noScope.key, '/calls')).toMatchObject({
      status: 403,
      body: { reasonCode: 'forbidden', missing: ['calls:read'] },
    });
  });

  it('serves a recording behind a signed URL that needs no key, and refuses it tampered or for another tenant', async () => {
    const t = await funded();
    const contactId = await lead(t.key, await campaign(t.tenantId), phone('0000'));
    const summary = await billedCallOf(t.key, contactId);
    const link = await api(t.key, `/calls/${summary.id}/recording`);
    expect(link.status).toBe(200);
    expect(link.body.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/api\/v1\/recordings\/[\w-]+\.[\w-]+$/);
    const expiresIn = Date.parse(link.body.expiresAt) - Date.now();
    expect(expiresIn).toBeGreaterThan(0);
    expect(expiresIn).toBeLessThanOrEqual(15 * 60_000);
    const audio = await fetch(link.body.url);
    expect(audio.status).toBe(200);
    expect(audio.headers.get('content-type')).toBe('audio/wav');
    const bytes = Buffer.from(await audio.arrayBuffer());
    expect(Number(audio.headers.get('content-length'))).toBe(bytes.length);
    expect(bytes.toString('ascii', 0, 4)).toBe('RIFF');
    expect(bytes.toString('ascii', 8, 12)).toBe('WAVE');
    // As long as the call: 42 s of 8 kHz, 16-bit audio. One byte range is answered 206.
    expect(bytes.length).toBe(44 + 42 * 16_000);
    expect(audio.headers.get('accept-ranges')).toBe('bytes');
    const part = await fetch(link.body.url, { headers: { Range: 'bytes=1000-1999' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 1000-1999/${bytes.length}`);
    expect(Buffer.from(await part.arrayBuffer()).equals(bytes.subarray(1000, 2000))).toBe(true);
    const token = link.body.url.split('/').pop() as string;
    const flipped = token.slice(0, -2) + (token.endsWith('AA') ? 'BB' : 'AA');
    for (const bad of [flipped, token.slice(0, 30)]) {
      const r = await call(`${gw}/api/v1/recordings/${bad}`);
      expect([r.status, r.body.reasonCode]).toEqual([403, 'recording_link_invalid']);
    }
    // The kill switch covers signed links too.
    expect((await admin('/kill-switch', { enabled: true }, 'PUT')).status).toBe(200);
    try {
      const off = await eventually('the kill switch', () => call(link.body.url), 5_000, {
        done: (r) => r.status === 503,
        intervalMs: 150,
      });
      expect(off.body.reasonCode).toBe('api_globally_disabled');
    } finally {
      expect((await admin('/kill-switch', { enabled: false }, 'PUT')).status).toBe(200);
    }
    await eventually('the link again', () => call(link.body.url), 5_000, {
      done: (r) => r.status === 200,
      intervalMs: 150,
    });
    // Scope: recordings:read; another tenant's call is not found.
    const other = await funded(10);
    expect((await api(other.key, `/calls/${summary.id}/recording`)).status).toBe(404);
    const noScope = await tenantWithKey(gw, { scopes: ['calls:read'] });
    expect(await api(noScope.key, `/calls/${summary.id}/recording`)).toMatchObject({
      status: 403,
      body: { missing: ['recordings:read'] },
    });
  });

  it('answers analytics from rollups, grouped by day, campaign or agent', async () => {
    const t = await funded();
    const c = await campaign(t.tenantId);
    for (const s of ['0000', '0004', '0001']) await billedCallOf(t.key, await lead(t.key, c, phone(s)));
    const byCampaign = await eventually('the rollups', () => api(t.key, '/analytics/calls?groupBy=campaign'), 45_000, {
      done: (r) => r.status === 200 && r.body.buckets[0]?.calls === 3 && r.body.buckets[0].creditsCharged === 4,
      intervalMs: 150,
    });
    expect(byCampaign.body).toEqual({
      groupBy: 'campaign',
      buckets: [{ key: c, calls: 3, completed: 1, durationSeconds: 62, avgDurationSeconds: 20.67, creditsCharged: 4 }],
    });
    const days = await api(t.key, '/analytics/calls?groupBy=day&timezone=Asia/Kathmandu');
    expect(days.status).toBe(200);
    expect(days.body.buckets.reduce((n: number, b: Json) => n + b.calls, 0)).toBe(3);
    expect((await api(t.key, '/analytics/calls?groupBy=agent')).body.buckets).toEqual([
      expect.objectContaining({ key: null, calls: 3 }),
    ]);
    for (const bad of [
      '?groupBy=week',
      '?groupBy=day&direction=up',
      '?groupBy=day&from=yesterday',
      '?groupBy=day&timezone=Mars/Olympus',
      '?groupBy[$ne]=day',
    ]) {
      expect([(await api(t.key, `/analytics/calls${bad}`)).status, bad]).toEqual([400, bad]);
    }
    const noScope = await tenantWithKey(gw, { scopes: ['calls:read'] });
    expect(await api(noScope.key, '/analytics/calls?groupBy=day')).toMatchObject({
      status: 403,
      body: { missing: ['analytics:read'] },
    });
  });

  it('sells pool numbers once, for credits, and answers inbound calls on them', async () => {
    const t = await funded(100);
    const number = phone('7000');
    expect(await admin('/number-pool', { phoneNumber: number, countryIso: 'US', monthlyCredits: 15 })).toMatchObject({
      status: 201,
      body: { number: { phoneNumber: number } },
    });
    const available = await api(t.key, `/numbers/available?countryIso=US&contains=${number.slice(-7)}`);
    expect(available.body.numbers.map((n: Json) => n.phoneNumber)).toEqual([number]);
    expect((await api(t.key, '/numbers/purchase', { phoneNumber: phone('7001') })).body.reasonCode).toBe(
      'number_not_found',
    );
    const bought = await api(t.key, '/numbers/purchase', { phoneNumber: number });
    expect(bought).toMatchObject({
      status: 201,
      body: {
        number: { phoneNumber: number, status: 'active', monthlyCredits: 15 },
        creditsCharged: 15,
        balanceAfter: 85,
      },
    });
    expect((await api(t.key, '/numbers')).body.numbers.map((n: Json) => n.phoneNumber)).toEqual([number]);
    const rival = await funded(100);
    expect(await api(rival.key, '/numbers/purchase', { phoneNumber: number })).toMatchObject({
      status: 409,
      body: { reasonCode: 'number_already_owned' },
    });
    expect((await api(t.key, '/credits/transactions?type=number_purchase')).body.transactions).toEqual([
      expect.objectContaining({ amount: -15 }),
    ]);

    // Inbound to the number: the default answering (no agent), billed at the inbound rate.
    const sim = await admin(`/tenants/${t.tenantId}/simulate/inbound-call`, {
      toNumber: number,
      fromNumber: '+14155559999',
      durationSeconds: 61,
    });
    expect(sim.status).toBe(202);
    const inbound = await eventually('the inbound call billed', () => api(t.key, '/calls?direction=inbound'), 45_000, {
      done: (r) => r.body.calls?.[0]?.billingStatus === 'charged',
      intervalMs: 150,
    });
    expect(inbound.body.calls[0]).toMatchObject({
      id: sim.body.callId,
      direction: 'inbound',
      agentId: null,
      agentName: null,
      fromNumber: '+14155559999',
      toNumber: number,
      durationSeconds: 61,
      creditsCharged: 2,
    });
    // To a number the tenant does not own; impossible durations.
    expect(
      (
        await admin(`/tenants/${rival.tenantId}/simulate/inbound-call`, {
          toNumber: number,
          fromNumber: '+14155559999',
        })
      ).status,
    ).toBe(404);
    for (const d of [-1, 86_400])
      expect(
        (
          await admin(`/tenants/${t.tenantId}/simulate/inbound-call`, {
            toNumber: number,
            fromNumber: '+14155559999',
            durationSeconds: d,
          })
        ).status,
      ).toBe(400);
  });

  it('keeps the concurrency package: calls in progress never exceed it, /calls/active shows them', async () => {
    const t = await funded(10_000);
    expect(await admin(`/tenants/${t.tenantId}/concurrency`, { maxConcurrentCalls: 2 }, 'PUT')).toEqual(
      expect.objectContaining({ status: 200, body: { maxConcurrentCalls: 2 } }),
    );
    expect((await admin(`/tenants/${t.tenantId}/concurrency`, { maxConcurrentCalls: 0 }, 'PUT')).status).toBe(400);
    const c = await campaign(t.tenantId);
    for (let i = 0; i < 5; i++) await lead(t.key, c, phone());
    let most = 0;
    await eventually(
      'five calls ended',
      async () => {
        const active = await api(t.key, '/calls/active');
        expect(active.status).toBe(200);
        most = Math.max(most, active.body.calls.length);
        return api(t.key, '/calls?status=completed');
      },
      60_000,
      { done: (r) => r.body.calls?.length === 5, intervalMs: 150 },
    );
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(2);
  });
});
