// Over 300 lines because its cases share one started system (a few seconds to start per file); split by area only where that cost pays.
import { call, startSystem, tenantWithKey, type CallResult, type System } from '../harness/system';

// POST /leads/batch through the real gateway and leads service (../shared/guide/api-decisions.md
// "Batch lead ingest"): a result per lead in order, each lead decided by the rules of POST /leads,
// externalId making a lead sent again harmless, the request refused only when it is not a batch,
// and every accepted lead stored once when leads dies mid-batch and the client sends it again.
// Telephony is left out: a call lead's dial request waits on the leads stream.

type Json = Record<string, any>;

const ALL_DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'];
const consent = { outboundCall: true, capturedAt: '2026-01-20T14:03:00Z', source: 'crm' };

describe('batch lead ingest through the gateway', () => {
  let sys: System;
  let gw: string;
  let nextLine = 0;
  /** Numbers of their own (San Francisco): the platform's do-not-call list is shared by the suite's tenants. */
  const phone = () => `+1415666${String(nextLine++).padStart(4, '0')}`;

  beforeAll(async () => {
    sys = await startSystem({ without: ['telephony'] });
    gw = sys.gateways[0]!.url;
  });
  afterAll(() => sys.stop());

  const admin = (path: string, body?: unknown, method?: string) =>
    call(`${gw}/admin/v1${path}`, { admin: true, ...(body !== undefined && { body }), ...(method && { method }) });
  const batch = (key: string, body: unknown, headers?: Record<string, string>) =>
    call(`${gw}/api/v1/leads/batch`, { key, body, ...(headers && { headers }) });
  const contact = async (key: string, id: string) =>
    (await call(`${gw}/api/v1/contacts/${id}`, { key })).body.contact as Json;
  const contactsOf = async (key: string, campaignId: string): Promise<Json[]> => {
    const out: Json[] = [];
    for (let page = 1; ; page++) {
      const res = await call(`${gw}/api/v1/campaigns/${campaignId}/contacts?limit=100&page=${page}`, { key });
      expect(res.status).toBe(200);
      out.push(...res.body.contacts);
      if (!res.body.pagination.hasMore) return out;
    }
  };

  /** A live tenant with credit and a running campaign (open at any hour unless `window` says otherwise). */
  async function tenant(window: Json = { start: '00:00', end: '24:00', days: ALL_DAYS }) {
    const t = await tenantWithKey(gw, { scopes: ['leads:read', 'leads:write'], rateLimitPerSecond: 10_000 });
    expect((await admin(`/tenants/${t.tenantId}/credits`, { amount: 100_000 })).status).toBe(201);
    const created = await admin(`/tenants/${t.tenantId}/campaigns`, {
      name: 'batch',
      callingWindow: window,
      maxCallSeconds: 120,
    });
    expect(created.status).toBe(201);
    const campaignId = created.body.campaign.id as string;
    expect((await admin(`/tenants/${t.tenantId}/campaigns/${campaignId}/start`, undefined, 'POST')).status).toBe(200);
    return { ...t, campaignId };
  }
  const callLead = (extra: Json = {}) => ({ phone: phone(), name: 'Ada Lovelace', channel: 'call', consent, ...extra });

  function expectError(res: CallResult, status: number, reasonCode: string) {
    expect({ status: res.status, reasonCode: res.body?.reasonCode }).toEqual({ status, reasonCode });
    expect(typeof res.body.error).toBe('string');
  }

  it('answers a result per lead in order, each decided on its own, and stores only the accepted leads', async () => {
    const t = await tenant();
    const listed = phone();
    expect((await admin(`/tenants/${t.tenantId}/do-not-call`, { phone: listed })).status).toBe(201);
    const other = await tenant();
    const accepted = callLead({ externalId: 'crm-1' });
    const leads: unknown[] = [
      accepted,
      callLead({ externalId: 'crm-2', phone: '+1415' }), // not a number
      42, // not an object
      callLead({ externalId: 'crm-3', phone: listed }),
      callLead({ externalId: 'crm-4', consent: undefined }),
      callLead({ externalId: 'crm-1' }), // the first lead's id again
      callLead({ externalId: 'crm-5', campaignId: other.campaignId }), // another tenant's campaign
      callLead({ externalId: 'bad id!' }),
      callLead({ surname: 'x' }), // a field a lead does not have
      callLead({ externalId: 'crm-6' }),
    ];
    const res = await batch(t.key, { campaignId: t.campaignId, leads });
    expect(res.status).toBe(200);
    const r = res.body.results as Json[];
    expect(r.map((x) => x.index)).toEqual(leads.map((_, i) => i));
    expect(r.map((x) => [x.status, x.reasonCode])).toEqual([
      ['accepted', undefined],
      ['refused', 'validation_error'],
      ['refused', 'validation_error'],
      ['refused', 'do_not_call'],
      ['refused', 'consent_required'],
      ['refused', 'validation_error'],
      ['refused', 'campaign_not_found'],
      ['refused', 'validation_error'],
      ['refused', 'validation_error'],
      ['accepted', undefined],
    ]);
    expect({ accepted: res.body.accepted, refused: res.body.refused }).toEqual({ accepted: 2, refused: 8 });
    // Field problems are named from the request body, as a refused POST /leads names them.
    expect(r[1]!.details.map((d: Json) => d.path)).toEqual(['body.leads.1.phone']);
    expect(r[2]!.details.map((d: Json) => d.path)).toEqual(['body.leads.2']);
    expect(r[3]!.details).toEqual([{ path: 'body.leads.3.phone', message: "on the tenant's do-not-call list" }]);
    expect(r[5]!.details.map((d: Json) => d.path)).toEqual(['body.leads.5.externalId']);
    expect(r[5]!.error).toMatch(/lead 0/);
    expect(r[7]!.details.map((d: Json) => d.path)).toEqual(['body.leads.7.externalId']);
    expect(r[8]!.details.map((d: Json) => d.path)).toEqual(['body.leads.8']);
    expect(r[0]).toMatchObject({ externalId: 'crm-1', contactId: expect.stringMatching(/^[0-9a-f]{24}$/) });
    expect(r[0]).not.toHaveProperty('duplicate');

    // The accepted leads are contacts with their own ids; the refused ones left nothing behind.
    const stored = await contactsOf(t.key, t.campaignId);
    expect(stored.map((c) => c.externalId).sort()).toEqual(['crm-1', 'crm-6']);
    const first = await contact(t.key, r[0]!.contactId);
    expect(first).toMatchObject({
      status: 'queued',
      externalId: 'crm-1',
      phone: accepted.phone,
      compliance: { consent: { outboundCall: true } },
    });
    expect(await contactsOf(other.key, other.campaignId)).toEqual([]);
  });

  it('ingests a lead sent again under its externalId once: the result repeats the first one, marked duplicate', async () => {
    const t = await tenant();
    const leads = Array.from({ length: 5 }, (_, i) => callLead({ externalId: `sync-${i}` }));
    const first = await batch(t.key, { campaignId: t.campaignId, leads });
    expect(first.body.accepted).toBe(5);
    // The CRM syncs again: the same five and two new ones, one of them in another campaign of the tenant.
    const again = await batch(t.key, {
      campaignId: t.campaignId,
      leads: [...leads, callLead({ externalId: 'sync-5' }), callLead({ externalId: 'sync-6' })],
    });
    expect(again.status).toBe(200);
    const r = again.body.results as Json[];
    expect(r.slice(0, 5).map((x) => ({ status: x.status, duplicate: x.duplicate, contactId: x.contactId }))).toEqual(
      first.body.results.map((x: Json) => ({ status: x.status, duplicate: true, contactId: x.contactId })),
    );
    expect(r.slice(5).map((x) => [x.status, x.duplicate])).toEqual([
      ['accepted', undefined],
      ['accepted', undefined],
    ]);
    expect((await contactsOf(t.key, t.campaignId)).length).toBe(7);

    // A sandbox key of the same tenant has externalIds of its own: the same id is a new sandbox lead.
    const sandbox = await admin(`/tenants/${t.tenantId}/api-keys`, {
      name: 'sandbox',
      mode: 'sandbox',
      scopes: ['leads:read', 'leads:write'],
      rateLimitPerSecond: 10_000,
    });
    expect(sandbox.status).toBe(201);
    const sb = await batch(sandbox.body.key, { campaignId: t.campaignId, leads: [callLead({ externalId: 'sync-0' })] });
    expect(sb.body.results).toEqual([
      { index: 0, externalId: 'sync-0', status: 'sandbox_accepted', contactId: expect.any(String) },
    ]);
    expect(sb.body.results[0].contactId).not.toBe(first.body.results[0].contactId);
    expect((await contact(t.key, sb.body.results[0].contactId)).status).toBe('sandbox_accepted');
    const sbAgain = await batch(sandbox.body.key, {
      campaignId: t.campaignId,
      leads: [callLead({ externalId: 'sync-0' })],
    });
    expect(sbAgain.body.results[0]).toMatchObject({
      status: 'sandbox_accepted',
      duplicate: true,
      contactId: sb.body.results[0].contactId,
    });
  });

  it('schedules a lead outside the calling window, with when it is dialled', async () => {
    // A window that is never open now: one minute on a day that is not today, anywhere.
    const today = new Date().getUTCDay();
    const day = ALL_DAYS[(today + 3) % 7]!;
    const t = await tenant({ start: '03:00', end: '03:01', days: [day] });
    const res = await batch(t.key, { campaignId: t.campaignId, leads: [callLead({ externalId: 'later' })] });
    expect(res.body.results[0]).toMatchObject({
      status: 'scheduled',
      nextAttemptAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    });
    expect(Date.parse(res.body.results[0].nextAttemptAt)).toBeGreaterThan(Date.now());
    expect((await contact(t.key, res.body.results[0].contactId)).status).toBe('scheduled');
    const again = await batch(t.key, { campaignId: t.campaignId, leads: [callLead({ externalId: 'later' })] });
    expect(again.body.results[0]).toMatchObject({
      status: 'scheduled',
      duplicate: true,
      nextAttemptAt: res.body.results[0].nextAttemptAt,
    });
  });

  it('refuses a request that is not a batch, and takes 1,000 leads in one', async () => {
    const t = await tenant();
    expectError(await batch(t.key, { campaignId: t.campaignId }), 400, 'validation_error');
    expectError(await batch(t.key, { campaignId: t.campaignId, leads: [] }), 400, 'validation_error');
    expectError(await batch(t.key, { campaignId: t.campaignId, leads: {} }), 400, 'validation_error');
    expectError(await batch(t.key, [callLead()]), 400, 'validation_error');
    const tooMany = await batch(t.key, {
      campaignId: t.campaignId,
      leads: Array.from({ length: 1_001 }, () => callLead()),
    });
    expectError(tooMany, 400, 'validation_error');
    expect(tooMany.body.details.map((d: Json) => d.path)).toEqual(['body.leads']);
    const big = await call(`${gw}/api/v1/leads/batch`, {
      key: t.key,
      raw: JSON.stringify({ campaignId: t.campaignId, leads: [callLead({ name: 'x'.repeat(3 * 1024 * 1024) })] }),
    });
    expectError(big, 413, 'payload_too_large');
    const malformed = await call(`${gw}/api/v1/leads/batch`, { key: t.key, raw: '{"leads": [' });
    expectError(malformed, 400, 'validation_error');
    // Nothing of the refused requests was stored.
    expect(await contactsOf(t.key, t.campaignId)).toEqual([]);
    // A lead without a campaign when the batch names none is refused alone.
    const noCampaign = await batch(t.key, { leads: [callLead(), { ...callLead(), campaignId: t.campaignId }] });
    expect(noCampaign.body.results.map((x: Json) => [x.status, x.details?.[0]?.path])).toEqual([
      ['refused', 'body.leads.0.campaignId'],
      ['accepted', undefined],
    ]);

    // 1,000 leads (over the 100 KB of a single request's body): one request, every lead accepted once.
    const leads = Array.from({ length: 1_000 }, (_, i) =>
      callLead({ externalId: `k-${i}`, name: `Lead number ${i} with a longer name` }),
    );
    const full = await batch(t.key, { campaignId: t.campaignId, leads });
    expect(full.status).toBe(200);
    expect({ accepted: full.body.accepted, refused: full.body.refused }).toEqual({ accepted: 1_000, refused: 0 });
    expect(new Set(full.body.results.map((x: Json) => x.contactId)).size).toBe(1_000);
    expect((await contactsOf(t.key, t.campaignId)).length).toBe(1_001);
  });

  it('replays a batch sent again with its Idempotency-Key, and counts one request against the rate limit', async () => {
    const t = await tenant();
    const body = { campaignId: t.campaignId, leads: [callLead(), callLead()] };
    const first = await batch(t.key, body, { 'Idempotency-Key': 'batch-1' });
    const again = await batch(t.key, body, { 'Idempotency-Key': 'batch-1' });
    expect(again.headers.get('idempotent-replayed')).toBe('true');
    expect(again.body).toEqual(first.body);
    expect((await contactsOf(t.key, t.campaignId)).length).toBe(2);

    const limited = await tenantWithKey(gw, { scopes: ['leads:write'], rateLimitPerSecond: 1 });
    const one = await batch(limited.key, {
      campaignId: t.campaignId,
      leads: Array.from({ length: 50 }, () => callLead()),
    });
    expect(one.status).toBe(200);
    expect(one.body.results.every((x: Json) => x.reasonCode === 'campaign_not_found')).toBe(true);
  });

  it('stores every lead once when leads dies mid-batch and the client sends the batch again with its Idempotency-Key', async () => {
    const t = await tenant();
    // No externalIds: the leads' contact ids follow from the Idempotency-Key and their places.
    const body = { campaignId: t.campaignId, leads: Array.from({ length: 1_000 }, () => callLead()) };
    const headers = { 'Idempotency-Key': 'crm-sync-2026-11-27' };
    const inFlight = batch(t.key, body, headers);
    await new Promise((r) => setTimeout(r, 150));
    sys.services.leads!.child.kill('SIGKILL');
    const cut = await inFlight;
    // Cut short (the gateway says the service is away), or done before the kill landed.
    expect([200, 503, 504]).toContain(cut.status);
    await sys.startService('leads');
    let res = await batch(t.key, body, headers);
    for (let i = 0; i < 50 && res.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 200));
      res = await batch(t.key, body, headers);
    }
    expect(res.status).toBe(200);
    expect(res.body.accepted).toBe(1_000);
    const stored = await contactsOf(t.key, t.campaignId);
    expect(stored.length).toBe(1_000);
    expect(new Set(stored.map((c) => c.phone)).size).toBe(1_000);
    expect(new Set(res.body.results.map((x: Json) => x.contactId))).toEqual(new Set(stored.map((c) => c.id)));
  }, 120_000);

  it('stores every lead once when leads dies mid-batch and the client sends it again by externalIds alone', async () => {
    const t = await tenant();
    const body = {
      campaignId: t.campaignId,
      leads: Array.from({ length: 1_000 }, (_, i) => callLead({ externalId: `sync-${i}` })),
    };
    const inFlight = batch(t.key, body);
    await new Promise((r) => setTimeout(r, 150));
    sys.services.leads!.child.kill('SIGKILL');
    expect([200, 503, 504]).toContain((await inFlight).status);
    await sys.startService('leads');
    // No Idempotency-Key: a new request each time, made harmless by the leads' own ids.
    let res = await batch(t.key, body);
    for (let i = 0; i < 50 && res.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 200));
      res = await batch(t.key, body);
    }
    expect(res.status).toBe(200);
    expect(res.body.accepted).toBe(1_000);
    const stored = await contactsOf(t.key, t.campaignId);
    expect(stored.length).toBe(1_000);
    expect(new Set(stored.map((c) => c.externalId)).size).toBe(1_000);
    // Those the first try stored are answered as duplicates now; the others were accepted now.
    expect(res.body.results.every((x: Json) => x.status === 'accepted')).toBe(true);
  }, 120_000);

  it('is reached only with leads:write', async () => {
    const t = await tenantWithKey(gw, { scopes: ['leads:read'] });
    const res = await batch(t.key, { leads: [callLead()] });
    expectError(res, 403, 'forbidden');
    expect(res.body.missing).toEqual(['leads:write']);
  });
});
