import { randomBytes } from 'node:crypto';
import { ADMIN_TOKEN, call, startSystem, tenantWithKey, type CallResult, type System } from '../harness/system';
import { eventually } from '../harness/wait';

// Outbound through the real gateway and the real leads service (with billing behind it):
// campaigns, POST /leads, POST /events, contacts, event routes and omni templates for tenants;
// campaigns, templates, do-not-call lists and the message record for the operator
// (../shared/spec/tenant-api-spec.md "POST /api/v1/leads", "Events"; ../shared/guide/api-decisions.md
// "Errors", "Endpoint shapes", "Compliance", "Sandbox"; ../shared/guide/operator-api.md).
// The telephony service is left out here: a `call` lead's dial request waits on the leads stream,
// so a live call contact stays `queued` (or `scheduled`) for the whole suite (telephony's suite
// follows dials to their end).

// The issue asks for 10,000 concurrent POST /leads with one Idempotency-Key. The normal suite sends
// E2E_IDEMPOTENCY_BURST of them, 200 unless set (E2E_IDEMPOTENCY_BURST=10000 for the full burst).
const BURST = Number(process.env.E2E_IDEMPOTENCY_BURST ?? 200);
if (!Number.isSafeInteger(BURST) || BURST < 2) throw new Error(`E2E_IDEMPOTENCY_BURST must be a whole number ≥ 2, not ${process.env.E2E_IDEMPOTENCY_BURST}`);

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const HEX_ID = /^[0-9a-f]{24}$/;
const ALL_DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
/** 00:00–24:00 every day: open at any hour, yet a window of local times (not `always`). */
const OPEN_ALL_DAY = { start: '00:00', end: '24:00', days: [...ALL_DAYS] };
const FOREIGN_ID = '0123456789abcdef01234567';

type Json = Record<string, any>;

describe('leads through the gateway and the leads service', () => {
  let sys: System;
  let gw: string;
  const SCOPES = ['leads:read', 'leads:write', 'credits:read'];

  // Every lead gets a number of its own (San Francisco, America/Los_Angeles): the platform's
  // do-not-call list is shared by the suite's tenants.
  let nextLine = 1000;
  const phone = () => `+1415555${String(nextLine++).padStart(4, '0')}`;

  beforeAll(async () => {
    sys = await startSystem({ without: ['telephony'] });
    gw = sys.gateways[0]!.url;
  });
  afterAll(() => sys.stop());

  // ---- helpers: the operator API ----
  // Generous limits: rate limiting has its own suite, this one sends bursts on purpose.
  const fresh = (mode: 'live' | 'sandbox' = 'live', scopes = SCOPES) => tenantWithKey(gw, { mode, scopes, rateLimitPerSecond: 10_000 });
  const admin = (path: string, body?: unknown, method?: string) => call(`${gw}/admin/v1${path}`, { admin: true, ...(body !== undefined && { body }), ...(method && { method }) });
  const sandboxKey = async (tenantId: string, scopes = SCOPES): Promise<string> => {
    const res = await admin(`/tenants/${tenantId}/api-keys`, { name: 'sandbox', mode: 'sandbox', scopes, rateLimitPerSecond: 10_000 });
    expect(res.status).toBe(201);
    expect(res.body.key).toMatch(/^sk_sandbox_/);
    return res.body.key;
  };
  const createCampaign = (tenantId: string, body: Json) => admin(`/tenants/${tenantId}/campaigns`, body);
  const startCampaign = (tenantId: string, id: string) => call(`${gw}/admin/v1/tenants/${tenantId}/campaigns/${id}/start`, { admin: true, method: 'POST' });
  /** A running campaign open at any hour (maxCallSeconds 120: one call's hold is 4 credits). */
  async function running(tenantId: string, extra: Json = {}): Promise<Json> {
    const created = await createCampaign(tenantId, { name: `campaign ${randomBytes(2).toString('hex')}`, callingWindow: OPEN_ALL_DAY, maxCallSeconds: 120, ...extra });
    expect(created.status).toBe(201);
    const started = await startCampaign(tenantId, created.body.campaign.id);
    expect(started.status).toBe(200);
    expect(started.body.campaign.status).toBe('running');
    return started.body.campaign;
  }
  const topUp = async (tenantId: string, amount: number) => {
    const res = await admin(`/tenants/${tenantId}/credits`, { amount });
    expect(res.status).toBe(201);
    return res.body.balance as number;
  };
  const template = async (tenantId: string, body: Json): Promise<Json> => {
    const res = await admin(`/tenants/${tenantId}/omni-templates`, body);
    expect(res.status).toBe(201);
    return res.body.template;
  };
  const whatsappTemplate = (tenantId: string) => template(tenantId, { channel: 'whatsapp', name: 'Appointment reminder', language: 'en', body: 'Hi {{1}}, your appointment is on {{2}}.' });
  const emailTemplate = (tenantId: string) => template(tenantId, { channel: 'email', name: 'Welcome', language: 'en', subject: 'Welcome, {{first_name}}', body: 'Hello {{first_name}}, your code is {{code}}.' });
  const messages = (tenantId: string, qs = '') => admin(`/tenants/${tenantId}/messages${qs}`);
  const dncTenant = (tenantId: string, number: string) => admin(`/tenants/${tenantId}/do-not-call`, { phone: number });
  const dncPlatform = (number: string) => admin('/do-not-call', { phone: number });

  // ---- helpers: the tenant API ----
  const api = (key: string, path: string, opts: { method?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {}) => call(`${gw}/api/v1${path}`, { key, ...opts });
  const lead = (key: string, body: unknown, headers?: Record<string, string>) => api(key, '/leads', { body, ...(headers && { headers }) });
  const event = (key: string, body: unknown) => api(key, '/events', { body });
  const contact = (key: string, id: string) => api(key, `/contacts/${id}`);
  const consent = { outboundCall: true, capturedAt: '2026-01-20T14:03:00Z', source: 'web form /pricing' };
  const callLead = (campaignId: string, extra: Json = {}) => ({ campaignId, phone: phone(), name: 'Ada Lovelace', channel: 'call', consent, ...extra });

  /** The documented error body: `{ error, reasonCode, details? }` (and `missing` on 403 only). */
  function expectError(res: CallResult, status: number, reasonCode: string, what = '') {
    expect({ what, status: res.status, reasonCode: res.body?.reasonCode }).toEqual({ what, status, reasonCode });
    expect(typeof res.body.error).toBe('string');
    expect(res.body.error.length).toBeGreaterThan(0);
    const allowed = status === 403 ? ['error', 'reasonCode', 'missing'] : ['error', 'reasonCode', 'details'];
    expect(Object.keys(res.body).filter((k) => !allowed.includes(k))).toEqual([]);
    if (res.body.details !== undefined) {
      expect(res.body.details.length).toBeGreaterThan(0);
      for (const d of res.body.details) expect(d).toEqual({ path: expect.any(String), message: expect.any(String) });
    }
    expect(JSON.stringify(res.body)).not.toMatch(/at .*\.js:\d+/);
  }
  const paths = (res: CallResult): string[] => (res.body?.details ?? []).map((d: { path: string }) => d.path);

  /** A date's weekday and wall-clock time in a zone. */
  function local(at: Date, timeZone: string): { weekday: string; time: string } {
    const parts = new Intl.DateTimeFormat('en-US', { timeZone, weekday: 'short', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' }).formatToParts(at);
    const get = (t: string) => parts.find((p) => p.type === t)!.value;
    return { weekday: get('weekday').toLowerCase().slice(0, 3), time: `${get('hour')}:${get('minute')}:${get('second')}` };
  }

  describe('the CRM pattern, as a tenant follows it', () => {
    it('campaign and templates by the operator; call lead, contact with its evidence, campaigns and their contacts; whatsapp+email lead rendered, sent and messaged', async () => {
      const t = await fresh();
      expect(await topUp(t.tenantId, 100)).toBe(100);

      // 1. The dashboard (operator) creates the API campaign: a draft, with what it was given.
      const before = Date.now();
      const created = await createCampaign(t.tenantId, {
        name: 'Spring webinar follow-up',
        type: 'api',
        channels: ['call', 'whatsapp', 'email'],
        agentName: 'Ava',
        callingWindow: OPEN_ALL_DAY,
        maxCallSeconds: 300,
        maxAttempts: 4,
        retryAfterMinutes: 30,
      });
      expect(created.status).toBe(201);
      const campaign = created.body.campaign;
      expect(campaign).toEqual({
        id: expect.stringMatching(HEX_ID),
        name: 'Spring webinar follow-up',
        type: 'api',
        status: 'draft',
        channels: ['call', 'whatsapp', 'email'],
        agentName: 'Ava',
        fromNumber: null,
        callingWindow: { always: false, start: '00:00', end: '24:00', days: [...ALL_DAYS] },
        maxCallSeconds: 300,
        maxAttempts: 4,
        retryAfterMinutes: 30,
        stats: { contacts: 0, queued: 0, completed: 0, failed: 0 },
        createdAt: expect.stringMatching(ISO),
        updatedAt: expect.stringMatching(ISO),
      });
      expect(Date.parse(campaign.createdAt)).toBeGreaterThanOrEqual(before - 5_000);

      // ... and starts it; starting it again answers it unchanged.
      const started = await startCampaign(t.tenantId, campaign.id);
      expect(started.status).toBe(200);
      expect(started.body.campaign).toEqual({ ...campaign, status: 'running', updatedAt: expect.stringMatching(ISO) });
      const again = await startCampaign(t.tenantId, campaign.id);
      expect(again.status).toBe(200);
      expect(again.body.campaign).toEqual(started.body.campaign);

      // 2. The operator creates a WhatsApp and an email template; placeholders are read from them.
      const wa = await whatsappTemplate(t.tenantId);
      expect(wa).toEqual({ id: expect.stringMatching(HEX_ID), channel: 'whatsapp', name: 'Appointment reminder', language: 'en', subject: null, body: 'Hi {{1}}, your appointment is on {{2}}.', variables: ['1', '2'] });
      const em = await emailTemplate(t.tenantId);
      expect(em).toEqual({
        id: expect.stringMatching(HEX_ID),
        channel: 'email',
        name: 'Welcome',
        language: 'en',
        subject: 'Welcome, {{first_name}}',
        body: 'Hello {{first_name}}, your code is {{code}}.',
        variables: ['first_name', 'code'],
      });

      // 3. The tenant lists its templates, by channel.
      const waList = await api(t.key, '/omni/templates?channel=whatsapp');
      expect(waList.status).toBe(200);
      expect(waList.body).toEqual({ templates: [wa] });
      expect((await api(t.key, '/omni/templates?channel=email')).body).toEqual({ templates: [em] });
      expect((await api(t.key, '/omni/templates')).body).toEqual({ templates: [em, wa] }); // newest first

      // 4. A call lead: accepted and queued at once (the window is open at every hour).
      const number = phone();
      const accepted = await lead(t.key, { campaignId: campaign.id, phone: number, name: 'Ada Lovelace', channel: 'call', consent });
      expect(accepted.status).toBe(202);
      expect(accepted.body).toEqual({ status: 'accepted', contactId: expect.stringMatching(HEX_ID), campaignId: campaign.id, channels: ['call'], contactStatus: 'queued', nextAttemptAt: null });

      // 5. The contact, with the compliance decision kept as evidence.
      const got = await contact(t.key, accepted.body.contactId);
      expect(got.status).toBe(200);
      const c = got.body.contact;
      expect(c).toEqual({
        id: accepted.body.contactId,
        campaignId: campaign.id,
        phone: number,
        name: 'Ada Lovelace',
        email: null,
        channels: ['call'],
        status: 'queued',
        attempts: 0,
        consent: { outboundCall: true, capturedAt: '2026-01-20T14:03:00.000Z', source: 'web form /pricing' },
        compliance: {
          checkedAt: expect.stringMatching(ISO),
          consent: { outboundCall: true, capturedAt: '2026-01-20T14:03:00.000Z', source: 'web form /pricing' },
          doNotCall: { tenant: false, platform: false },
          callingWindow: {
            window: { always: false, start: '00:00', end: '24:00', days: [...ALL_DAYS] },
            timeZones: ['America/Los_Angeles'],
            timeZoneSource: 'number',
            open: true,
            nextOpenAt: null,
          },
        },
        nextAttemptAt: null,
        lastCallId: null,
        lastOutcome: null,
        endReason: null,
        sandbox: false,
        externalId: null,
        createdAt: expect.stringMatching(ISO),
        updatedAt: expect.stringMatching(ISO),
        conversation: null,
        analysis: null,
      });
      expect(Math.abs(Date.parse(c.compliance.checkedAt) - Date.now())).toBeLessThan(60_000);

      // 6. Campaigns, read-only for the tenant, with stats.
      const list = await api(t.key, '/campaigns');
      expect(list.status).toBe(200);
      const withStats = { ...started.body.campaign, stats: { contacts: 1, queued: 1, completed: 0, failed: 0 } };
      expect(list.body).toEqual({ campaigns: [withStats], pagination: { page: 1, limit: 25, total: 1, totalPages: 1, hasMore: false } });
      const one = await api(t.key, `/campaigns/${campaign.id}`);
      expect(one.status).toBe(200);
      expect(one.body).toEqual({ campaign: withStats });

      // 7. Its contacts, newest first, page by page.
      const more: string[] = [];
      for (let i = 0; i < 4; i++) {
        const r = await lead(t.key, { campaignId: campaign.id, phone: phone(), name: `Lead ${i}`, consent });
        expect(r.status).toBe(202);
        expect(r.body.channels).toEqual(['call']); // neither channel nor channels: call
        more.push(r.body.contactId);
      }
      const newestFirst = [...more].reverse().concat(accepted.body.contactId);
      const all = await api(t.key, `/campaigns/${campaign.id}/contacts`);
      expect(all.status).toBe(200);
      expect(all.body.pagination).toEqual({ page: 1, limit: 25, total: 5, totalPages: 1, hasMore: false });
      expect(all.body.contacts.map((x: Json) => x.id)).toEqual(newestFirst);
      expect(all.body.contacts[4]).toEqual(c);
      const paged: string[] = [];
      for (let page = 1; page <= 3; page++) {
        const p = await api(t.key, `/campaigns/${campaign.id}/contacts?limit=2&page=${page}`);
        expect(p.body.pagination).toEqual({ page, limit: 2, total: 5, totalPages: 3, hasMore: page < 3 });
        paged.push(...p.body.contacts.map((x: Json) => x.id));
      }
      expect(paged).toEqual(newestFirst);
      const past = await api(t.key, `/campaigns/${campaign.id}/contacts?limit=2&page=4`);
      expect(past.body).toEqual({ contacts: [], pagination: { page: 4, limit: 2, total: 5, totalPages: 3, hasMore: false } });

      // 8. WhatsApp plus email without a call: both rendered, recorded, sent; the contact messaged.
      const mobile = phone();
      const omni = await lead(t.key, {
        campaignId: campaign.id,
        phone: mobile,
        name: 'Grace Hopper',
        email: 'grace@example.com',
        channels: ['whatsapp', 'email'],
        whatsappTemplateId: wa.id,
        whatsappParams: ['Grace', 'Tuesday 10:00'],
        emailTemplateId: em.id,
        // A value is inserted as written: `$&` and `{{…}}` in it are not expanded.
        templateVariables: { first_name: 'Grace', code: 'A$&B {{first_name}}' },
      });
      expect(omni.status).toBe(202);
      expect(omni.body).toEqual({ status: 'accepted', contactId: expect.stringMatching(HEX_ID), campaignId: campaign.id, channels: ['whatsapp', 'email'], contactStatus: 'queued', nextAttemptAt: null });
      const sent = await eventually('both messages sent', async () => (await messages(t.tenantId)).body.messages as Json[], 45_000, {
        done: (ms) => ms.filter((m) => m.contactId === omni.body.contactId && m.status === 'sent').length === 2,
        intervalMs: 200,
      });
      const mine = sent.filter((m) => m.contactId === omni.body.contactId);
      expect(mine).toEqual(
        expect.arrayContaining([
          {
            id: expect.stringMatching(HEX_ID),
            contactId: omni.body.contactId,
            channel: 'whatsapp',
            to: mobile,
            subject: null,
            body: 'Hi Grace, your appointment is on Tuesday 10:00.',
            status: 'sent',
            createdAt: expect.stringMatching(ISO),
          },
          {
            id: expect.stringMatching(HEX_ID),
            contactId: omni.body.contactId,
            channel: 'email',
            to: 'grace@example.com',
            subject: 'Welcome, Grace',
            body: 'Hello Grace, your code is A$&B {{first_name}}.',
            status: 'sent',
            createdAt: expect.stringMatching(ISO),
          },
        ]),
      );
      expect(sent).toHaveLength(2); // call leads send nothing
      expect((await messages(t.tenantId, '?channel=email')).body.messages.map((m: Json) => m.channel)).toEqual(['email']);
      expect((await messages(t.tenantId, '?channel=whatsapp')).body.messages.map((m: Json) => m.channel)).toEqual(['whatsapp']);

      const messaged = await eventually('the contact messaged', () => contact(t.key, omni.body.contactId), 45_000, { done: (r) => r.body.contact?.status === 'messaged', intervalMs: 200 });
      expect(messaged.body.contact).toMatchObject({ status: 'messaged', channels: ['whatsapp', 'email'], email: 'grace@example.com', consent: null, compliance: null, attempts: 0 });
      expect((await api(t.key, `/campaigns/${campaign.id}`)).body.campaign.stats).toEqual({ contacts: 6, queued: 5, completed: 1, failed: 0 });
    });

    it('keeps a call lead outside the calling window scheduled, with nextAttemptAt the opening in the called party’s zone', async () => {
      const t = await fresh();
      await topUp(t.tenantId, 100);
      // Today and tomorrow in Los Angeles are left out: the next opening is midnight after them.
      const now = new Date();
      const today = local(now, 'America/Los_Angeles').weekday;
      const tomorrow = ALL_DAYS[(ALL_DAYS.indexOf(today as (typeof ALL_DAYS)[number]) + 1) % 7]!;
      const dayAfter = ALL_DAYS[(ALL_DAYS.indexOf(today as (typeof ALL_DAYS)[number]) + 2) % 7]!;
      const days = ALL_DAYS.filter((d) => d !== today && d !== tomorrow);
      const campaign = await running(t.tenantId, { callingWindow: { start: '00:00', end: '24:00', days } });
      expect(campaign.callingWindow).toEqual({ always: false, start: '00:00', end: '24:00', days });

      const res = await lead(t.key, callLead(campaign.id));
      expect(res.status).toBe(202);
      expect(res.body).toEqual({ status: 'accepted', contactId: expect.any(String), campaignId: campaign.id, channels: ['call'], contactStatus: 'scheduled', nextAttemptAt: expect.stringMatching(ISO) });
      const at = new Date(res.body.nextAttemptAt);
      // Midnight in Los Angeles at the start of the first allowed day (the day after tomorrow,
      // unless the test straddled a local midnight).
      expect(local(at, 'America/Los_Angeles').time).toBe('00:00:00');
      expect([dayAfter, ALL_DAYS[(ALL_DAYS.indexOf(dayAfter) + 1) % 7]]).toContain(local(at, 'America/Los_Angeles').weekday);
      expect(at.getTime() - now.getTime()).toBeGreaterThan(24 * 3600_000);
      expect(at.getTime() - now.getTime()).toBeLessThanOrEqual(72 * 3600_000);

      const c = (await contact(t.key, res.body.contactId)).body.contact;
      expect(c).toMatchObject({ status: 'scheduled', nextAttemptAt: res.body.nextAttemptAt, attempts: 0 });
      expect(c.compliance.callingWindow).toEqual({
        window: { always: false, start: '00:00', end: '24:00', days },
        timeZones: ['America/Los_Angeles'],
        timeZoneSource: 'number',
        open: false,
        nextOpenAt: res.body.nextAttemptAt,
      });
      expect((await api(t.key, `/campaigns/${campaign.id}`)).body.campaign.stats).toEqual({ contacts: 1, queued: 1, completed: 0, failed: 0 });
    });

    it('checks the window in every zone of a number that maps to several (Idaho: Boise and Los Angeles)', async () => {
      const t = await fresh();
      await topUp(t.tenantId, 100);
      const campaign = await running(t.tenantId);
      const res = await lead(t.key, callLead(campaign.id, { phone: '+12085550123' }));
      expect(res.status).toBe(202);
      const c = (await contact(t.key, res.body.contactId)).body.contact;
      expect(c.phone).toBe('+12085550123');
      expect(c.compliance.callingWindow.timeZones).toEqual(['America/Boise', 'America/Los_Angeles']);
    });

    it('gives a campaign created with a name only the documented defaults (every channel, 08:00–21:00, 600 s, 3 attempts, 60 min)', async () => {
      const t = await fresh();
      const res = await createCampaign(t.tenantId, { name: '  Defaults  ' });
      expect(res.status).toBe(201);
      expect(res.body.campaign).toMatchObject({
        name: 'Defaults',
        type: 'api',
        status: 'draft',
        channels: ['call', 'whatsapp', 'email'],
        agentName: null,
        callingWindow: { always: false, start: '08:00', end: '21:00', days: [] },
        maxCallSeconds: 600,
        maxAttempts: 3,
        retryAfterMinutes: 60,
      });
    });
    it('lists a tenant’s campaigns newest first, page by page, and none of another tenant’s', async () => {
      const t = await fresh();
      const names = ['first', 'second', 'third', 'fourth', 'fifth'];
      for (const name of names) expect((await createCampaign(t.tenantId, { name })).status).toBe(201);
      const other = await fresh();
      await createCampaign(other.tenantId, { name: 'not yours' });
      const all = await api(t.key, '/campaigns');
      expect(all.body.campaigns.map((c: Json) => c.name)).toEqual([...names].reverse());
      expect(all.body.pagination).toEqual({ page: 1, limit: 25, total: 5, totalPages: 1, hasMore: false });
      const paged: string[] = [];
      for (let page = 1; page <= 3; page++) {
        const res = await api(t.key, `/campaigns?limit=2&page=${page}`);
        expect(res.body.pagination).toEqual({ page, limit: 2, total: 5, totalPages: 3, hasMore: page < 3 });
        paged.push(...res.body.campaigns.map((c: Json) => c.name));
      }
      expect(paged).toEqual([...names].reverse());
      expect((await api(other.key, '/campaigns')).body.campaigns.map((c: Json) => c.name)).toEqual(['not yours']);
    });

    it('stores 60 concurrent leads of two tenants (written together) each once, in its own tenant’s campaign, with its own messages', async () => {
      const tenants = await Promise.all([fresh(), fresh()]);
      const setups = await Promise.all(
        tenants.map(async (t) => {
          await topUp(t.tenantId, 1_000);
          return { t, campaign: await running(t.tenantId), wa: await whatsappTemplate(t.tenantId) };
        }),
      );
      const sent = await Promise.all(
        Array.from({ length: 60 }, (_, i) => {
          const { t, campaign, wa } = setups[i % 2]!;
          const body = i % 3 === 0 ? { campaignId: campaign.id, phone: phone(), channel: 'whatsapp', whatsappTemplateId: wa.id, whatsappParams: [`Lead${i}`, 'Monday'] } : callLead(campaign.id, { name: `Lead ${i}` });
          return lead(t.key, body).then((res) => ({ i, tenant: i % 2, res }));
        }),
      );
      expect(sent.filter((s) => s.res.status !== 202).map((s) => [s.i, s.res.status, s.res.body])).toEqual([]);
      expect(new Set(sent.map((s) => s.res.body.contactId)).size).toBe(60);
      for (const [n, { t, campaign }] of setups.entries()) {
        const mine = sent.filter((s) => s.tenant === n);
        const listed = (await api(t.key, `/campaigns/${campaign.id}/contacts?limit=100`)).body;
        expect(listed.pagination.total).toBe(30);
        expect(listed.contacts.map((c: Json) => c.id).sort()).toEqual(mine.map((s) => s.res.body.contactId).sort());
        for (const s of mine) expect(s.res.body.campaignId).toBe(campaign.id);
        const whatsappIds = new Set(mine.filter((s) => s.i % 3 === 0).map((s) => s.res.body.contactId));
        const ms = (await messages(t.tenantId)).body.messages as Json[];
        expect(ms.map((m) => m.contactId).sort()).toEqual([...whatsappIds].sort());
        for (const m of ms) expect(m.body).toBe(`Hi Lead${mine.find((s) => s.res.body.contactId === m.contactId)!.i}, your appointment is on Monday.`);
      }
    });
  });

  describe('refusals, each with its status, reasonCode and the error body', () => {
    let t: { tenantId: string; key: string };
    let other: { tenantId: string; key: string };
    let campaign: Json;
    let wa: Json;
    let em: Json;

    beforeAll(async () => {
      t = await fresh();
      other = await fresh();
      await topUp(t.tenantId, 1_000);
      campaign = await running(t.tenantId);
      wa = await whatsappTemplate(t.tenantId);
      em = await emailTemplate(t.tenantId);
    });
    const total = async (campaignId = campaign.id) => (await api(t.key, `/campaigns/${campaignId}/contacts`)).body.pagination.total as number;

    it('answers a lead for a draft campaign 409 campaign_not_running, and for another tenant’s or an unknown campaign 422 campaign_not_found', async () => {
      const draft = await createCampaign(t.tenantId, { name: 'Not yet', callingWindow: OPEN_ALL_DAY });
      expect(draft.status).toBe(201);
      const res = await lead(t.key, callLead(draft.body.campaign.id));
      expectError(res, 409, 'campaign_not_running');
      // The campaign rule comes first: a bad phone on a draft campaign is still 409.
      expectError(await lead(t.key, callLead(draft.body.campaign.id, { phone: '+15551234567' })), 409, 'campaign_not_running', 'draft and bad phone');

      const foreign = await running(other.tenantId);
      expectError(await lead(t.key, callLead(foreign.id)), 422, 'campaign_not_found', 'another tenant’s');
      expectError(await lead(t.key, callLead(FOREIGN_ID)), 422, 'campaign_not_found', 'unknown');
      // Nothing was stored for either tenant.
      expect((await api(other.key, `/campaigns/${foreign.id}/contacts`)).body.pagination.total).toBe(0);
      expect((await api(t.key, `/campaigns/${draft.body.campaign.id}/contacts`)).body.pagination.total).toBe(0);
    });

    it.each([
      ['letters', '+1-800-FLOWERS'],
      ['letters after digits', '+1415555000a'],
      ['no leading plus', '14155550123'],
      ['a national format', '(415) 555-0123'],
      ['no real numbering plan (area code 555)', '+15551234567'],
      ['too short', '+1415555012'],
      ['only a plus', '+'],
      ['an empty string', ''],
      ['over 32 characters', '+1 415 555 0123                   '],
    ])('refuses a phone of %s with 400 validation_error naming phone', async (_what, bad) => {
      const res = await lead(t.key, callLead(campaign.id, { phone: bad }));
      expectError(res, 400, 'validation_error');
      expect(paths(res).every((p) => /(^|\.)phone$/.test(p))).toBe(true);
    });

    it('accepts a phone with formatting characters and stores it as E.164', async () => {
      const res = await lead(t.key, callLead(campaign.id, { phone: '+44 (0) 20 7946 0958' }));
      expect(res.status).toBe(202);
      const c = (await contact(t.key, res.body.contactId)).body.contact;
      expect(c.phone).toBe('+442079460958');
      expect(c.compliance.callingWindow.timeZones).toEqual(['Europe/London']);
    });

    it('refuses channel lists that are empty, repeat a channel, or come with channel too (400)', async () => {
      const before = await total();
      for (const [what, extra] of [
        ['channels: []', { channel: undefined, channels: [] }],
        ['a duplicate channel', { channel: undefined, channels: ['call', 'call'] }],
        ['both channel and channels', { channel: 'call', channels: ['call'] }],
        ['an unknown channel', { channel: 'sms' }],
        ['an unknown channel in the list', { channel: undefined, channels: ['call', 'sms'] }],
      ] as const) {
        const res = await lead(t.key, callLead(campaign.id, extra));
        expectError(res, 400, 'validation_error', what);
        expect(paths(res).some((p) => /channel/.test(p))).toBe(true);
      }
      // A channel the campaign does not use.
      const callOnly = await running(t.tenantId, { channels: ['call'] });
      const res = await lead(t.key, { campaignId: callOnly.id, phone: phone(), channel: 'whatsapp', whatsappTemplateId: wa.id, whatsappParams: ['a', 'b'] });
      expectError(res, 400, 'validation_error', 'a channel the campaign lacks');
      expect(res.body.error).toMatch(/whatsapp/);
      // The email channel needs an email address.
      const noEmail = await lead(t.key, { campaignId: campaign.id, phone: phone(), channel: 'email', emailTemplateId: em.id, templateVariables: { first_name: 'A', code: 'B' } });
      expectError(noEmail, 400, 'validation_error', 'email without an address');
      expect(paths(noEmail).some((p) => /email$/.test(p))).toBe(true);
      expect(await total()).toBe(before);
    });

    it('answers a call lead without consent.outboundCall true 422 consent_required', async () => {
      for (const [what, extra] of [
        ['outboundCall false', { consent: { outboundCall: false, capturedAt: '2026-01-20T14:03:00Z' } }],
        ['no consent', { consent: undefined }],
      ] as const) {
        const res = await lead(t.key, callLead(campaign.id, extra));
        expectError(res, 422, 'consent_required', what);
      }
      // WhatsApp alone needs no call consent.
      const wOnly = await lead(t.key, { campaignId: campaign.id, phone: phone(), channel: 'whatsapp', whatsappTemplateId: wa.id, whatsappParams: ['a', 'b'] });
      expect(wOnly.status).toBe(202);
    });

    it('refuses consent.capturedAt that is not a date-time, or lies in the future, with 400', async () => {
      for (const [what, capturedAt] of [
        ['a word', 'yesterday'],
        ['a date without a time', '2026-01-20'],
        ['an impossible date', '2026-02-30T10:00:00Z'],
        ['a number', 1_700_000_000_000],
      ] as const) {
        const res = await lead(t.key, callLead(campaign.id, { consent: { outboundCall: true, capturedAt } }));
        expectError(res, 400, 'validation_error', what);
        expect(paths(res).some((p) => /capturedAt$/.test(p))).toBe(true);
      }
      const future = await lead(t.key, callLead(campaign.id, { consent: { outboundCall: true, capturedAt: new Date(Date.now() + 3600_000).toISOString() } }));
      expectError(future, 400, 'validation_error', 'an hour ahead');
      expect(paths(future).some((p) => /capturedAt$/.test(p))).toBe(true);
      // An offset is fine, and stored as the instant it names.
      const offset = await lead(t.key, callLead(campaign.id, { consent: { outboundCall: true, capturedAt: '2026-01-20T16:03:00+02:00', source: 'crm' } }));
      expect(offset.status).toBe(202);
      expect((await contact(t.key, offset.body.contactId)).body.contact.consent).toEqual({ outboundCall: true, capturedAt: '2026-01-20T14:03:00.000Z', source: 'crm' });
    });

    it('answers a number on the tenant’s or the platform’s do-not-call list 422 do_not_call, details naming the list', async () => {
      const onTenant = phone();
      const onPlatform = phone();
      const onBoth = phone();
      expect((await dncTenant(t.tenantId, onTenant)).status).toBe(201);
      expect((await dncPlatform(onPlatform)).status).toBe(201);
      expect((await dncTenant(t.tenantId, onBoth)).status).toBe(201);
      expect((await dncPlatform(onBoth)).status).toBe(201);
      const before = await total();

      const tenantRes = await lead(t.key, callLead(campaign.id, { phone: onTenant }));
      expectError(tenantRes, 422, 'do_not_call', 'tenant list');
      expect(tenantRes.body.details).toEqual([{ path: expect.stringMatching(/phone$/), message: expect.stringMatching(/tenant/) }]);
      expect(tenantRes.body.details[0].message).not.toMatch(/platform/);

      const platformRes = await lead(t.key, callLead(campaign.id, { phone: onPlatform }));
      expectError(platformRes, 422, 'do_not_call', 'platform list');
      expect(platformRes.body.details).toEqual([{ path: expect.stringMatching(/phone$/), message: expect.stringMatching(/platform/) }]);
      expect(platformRes.body.details[0].message).not.toMatch(/tenant/);

      const bothRes = await lead(t.key, callLead(campaign.id, { phone: onBoth }));
      expectError(bothRes, 422, 'do_not_call', 'both lists');
      expect(bothRes.body.details.map((d: Json) => d.message)).toEqual([expect.stringMatching(/tenant/), expect.stringMatching(/platform/)]);

      // The tenant list is the tenant's; the platform list holds for every tenant.
      const otherCampaign = await running(other.tenantId);
      await topUp(other.tenantId, 100);
      expect((await lead(other.key, callLead(otherCampaign.id, { phone: onTenant }))).status).toBe(202);
      expectError(await lead(other.key, callLead(otherCampaign.id, { phone: onPlatform })), 422, 'do_not_call', 'platform list, other tenant');
      // The same number written otherwise is the same number.
      const formatted = onTenant.replace(/^\+1(\d{3})(\d{3})(\d{4})$/, '+1 ($1) $2-$3');
      expectError(await lead(t.key, callLead(campaign.id, { phone: formatted })), 422, 'do_not_call', 'formatted');
      // Consent is checked before the lists.
      expectError(await lead(t.key, callLead(campaign.id, { phone: onTenant, consent: { outboundCall: false } })), 422, 'consent_required', 'consent first');
      // The lists guard the call channel: a WhatsApp message to the number is no call.
      expect((await lead(t.key, { campaignId: campaign.id, phone: onTenant, channel: 'whatsapp', whatsappTemplateId: wa.id, whatsappParams: ['a', 'b'] })).status).toBe(202);
      expect(await total()).toBe(before + 1);
    });

    it('refuses a message lead whose template misses a placeholder value with 400 naming it', async () => {
      const waMissing = await lead(t.key, { campaignId: campaign.id, phone: phone(), channel: 'whatsapp', whatsappTemplateId: wa.id, whatsappParams: ['Ada'] });
      expectError(waMissing, 400, 'validation_error', 'whatsapp {{2}}');
      expect(waMissing.body.details).toEqual([{ path: expect.stringMatching(/whatsappParams\.2$/), message: expect.stringMatching(/\{\{2\}\}/) }]);
      expect(waMissing.body.error).toMatch(/2/);

      const emMissing = await lead(t.key, { campaignId: campaign.id, phone: phone(), email: 'a@example.com', channel: 'email', emailTemplateId: em.id, templateVariables: { first_name: 'Ada' } });
      expectError(emMissing, 400, 'validation_error', 'email {{code}}');
      expect(emMissing.body.details).toEqual([{ path: expect.stringMatching(/templateVariables\.code$/), message: expect.stringMatching(/\{\{code\}\}/) }]);
      expect(emMissing.body.error).toMatch(/code/);

      // The object form of whatsappParams names the same placeholders.
      const objectForm = await lead(t.key, { campaignId: campaign.id, phone: phone(), channel: 'whatsapp', whatsappTemplateId: wa.id, whatsappParams: { '1': 'Ada', '3': 'x' } });
      expectError(objectForm, 400, 'validation_error', 'object form');
      expect(paths(objectForm)).toEqual([expect.stringMatching(/whatsappParams\.2$/)]);
      const objectOk = await lead(t.key, { campaignId: campaign.id, phone: phone(), channel: 'whatsapp', whatsappTemplateId: wa.id, whatsappParams: { '1': 'Ada', '2': 'Monday' } });
      expect(objectOk.status).toBe(202);

      // No template named for a message channel, and both channels at once: every problem listed.
      const none = await lead(t.key, { campaignId: campaign.id, phone: phone(), email: 'a@example.com', channels: ['whatsapp', 'email'] });
      expectError(none, 400, 'validation_error', 'no template ids');
      expect(
        paths(none)
          .map((p) => p.replace(/^body\./, ''))
          .sort(),
      ).toEqual(['emailTemplateId', 'whatsappTemplateId']);
    });

    it('refuses template values that are not strings (400)', async () => {
      for (const [what, extra] of [
        ['a number in whatsappParams', { channel: 'whatsapp', whatsappTemplateId: wa.id, whatsappParams: ['Ada', 10] }],
        ['null in whatsappParams', { channel: 'whatsapp', whatsappTemplateId: wa.id, whatsappParams: { '1': 'Ada', '2': null } }],
        ['an object in whatsappParams', { channel: 'whatsapp', whatsappTemplateId: wa.id, whatsappParams: { '1': 'Ada', '2': { day: 'Mon' } } }],
        ['a number in templateVariables', { channel: 'email', email: 'a@example.com', emailTemplateId: em.id, templateVariables: { first_name: 'Ada', code: 42 } }],
        ['a boolean in templateVariables', { channel: 'email', email: 'a@example.com', emailTemplateId: em.id, templateVariables: { first_name: true, code: 'x' } }],
        ['a list as templateVariables', { channel: 'email', email: 'a@example.com', emailTemplateId: em.id, templateVariables: ['Ada', 'x'] }],
      ] as const) {
        const res = await lead(t.key, { campaignId: campaign.id, phone: phone(), ...extra });
        expectError(res, 400, 'validation_error', what);
        expect(paths(res).some((p) => /whatsappParams|templateVariables/.test(p))).toBe(true);
      }
    });

    it('refuses a template id of another tenant, an unknown one, or one of the other channel (400)', async () => {
      const foreignWa = await whatsappTemplate(other.tenantId);
      for (const [what, extra] of [
        ['another tenant’s', { channel: 'whatsapp', whatsappTemplateId: foreignWa.id, whatsappParams: ['a', 'b'] }],
        ['an unknown id', { channel: 'whatsapp', whatsappTemplateId: FOREIGN_ID, whatsappParams: ['a', 'b'] }],
        ['an email template as WhatsApp', { channel: 'whatsapp', whatsappTemplateId: em.id, whatsappParams: ['a', 'b'] }],
        ['not an id', { channel: 'whatsapp', whatsappTemplateId: 'welcome', whatsappParams: ['a', 'b'] }],
      ] as const) {
        const res = await lead(t.key, { campaignId: campaign.id, phone: phone(), ...extra });
        expectError(res, 400, 'validation_error', what);
        expect(paths(res)).toEqual([expect.stringMatching(/whatsappTemplateId$/)]);
      }
      // The other tenant's list does not show it to this tenant, nor this tenant's to the other.
      expect((await api(t.key, '/omni/templates')).body.templates.map((x: Json) => x.id)).not.toContain(foreignWa.id);
      expect((await api(other.key, '/omni/templates')).body.templates.map((x: Json) => x.id)).toEqual([foreignWa.id]);
    });

    it('answers a live call lead on an empty wallet 402 insufficient_credits until the wallet covers one call’s hold', async () => {
      const poor = await fresh();
      // maxCallSeconds 120 at the default outbound rate (2 a started minute): a hold of 4 credits.
      const c = await running(poor.tenantId, { maxCallSeconds: 120 });
      const res = await lead(poor.key, callLead(c.id));
      expectError(res, 402, 'insufficient_credits', 'empty wallet');
      // Every other rule comes first: a do-not-call number on an empty wallet is 422, a missing value 400.
      const listed = phone();
      await dncTenant(poor.tenantId, listed);
      expectError(await lead(poor.key, callLead(c.id, { phone: listed })), 422, 'do_not_call', 'do-not-call before credit');
      expectError(await lead(poor.key, callLead(c.id, { consent: { outboundCall: false } })), 422, 'consent_required', 'consent before credit');
      // A message lead needs no credit.
      const waT = await whatsappTemplate(poor.tenantId);
      const msg = await lead(poor.key, { campaignId: c.id, phone: phone(), channel: 'whatsapp', whatsappTemplateId: waT.id, whatsappParams: ['a', 'b'] });
      expect(msg.status).toBe(202);

      expect(await topUp(poor.tenantId, 3)).toBe(3);
      expectError(await lead(poor.key, callLead(c.id)), 402, 'insufficient_credits', 'one credit short');
      expect(await topUp(poor.tenantId, 1)).toBe(4);
      const ok = await lead(poor.key, callLead(c.id));
      expect(ok.status).toBe(202);
      expect(ok.body).toMatchObject({ status: 'accepted', contactStatus: 'queued' });
      // The check reserves nothing: the wallet is as it was.
      expect((await api(poor.key, '/credits')).body).toMatchObject({ balance: 4, available: 4, held: 0 });
      expect((await api(poor.key, `/campaigns/${c.id}/contacts`)).body.pagination.total).toBe(2);
    });

    it('refuses a lead whose name is a number, unknown fields, and other malformed bodies (400)', async () => {
      const before = await total();
      const cases: [string, unknown, RegExp][] = [
        ['a name that is a number', callLead(campaign.id, { name: 42 }), /name$/],
        ['a blank name', callLead(campaign.id, { name: '   ' }), /name$/],
        ['a name with a line break', callLead(campaign.id, { name: 'Ada\nLovelace' }), /name$/],
        ['an unknown field', callLead(campaign.id, { priority: 'high' }), /.*/],
        ['an unknown consent field', callLead(campaign.id, { consent: { ...consent, ip: '1.2.3.4' } }), /consent/],
        ['outboundCall as a string', callLead(campaign.id, { consent: { outboundCall: 'true' } }), /outboundCall$/],
        ['a campaignId that is not an id', callLead('not-a-campaign'), /campaignId$/],
        ['no campaignId', { phone: phone(), consent, channel: 'call' }, /campaignId$/],
        ['no phone', { campaignId: campaign.id, consent, channel: 'call' }, /phone$/],
        ['a phone that is a number', callLead(campaign.id, { phone: 14155550123 }), /phone$/],
        ['a bad email', callLead(campaign.id, { email: 'not-an-email' }), /email$/],
        ['a source over 200 characters', callLead(campaign.id, { consent: { ...consent, source: 'x'.repeat(201) } }), /source$/],
      ];
      for (const [what, body, path] of cases) {
        const res = await lead(t.key, body);
        expectError(res, 400, 'validation_error', what);
        expect({ what, matched: paths(res).some((p) => path.test(p)) }).toEqual({ what, matched: true });
      }
      expectError(await api(t.key, '/leads', { raw: '{"campaignId": ' }), 400, 'validation_error', 'malformed JSON');
      expectError(await api(t.key, '/leads', { raw: '[]' }), 400, 'validation_error', 'a JSON array');
      expectError(await api(t.key, '/leads', { method: 'POST' }), 400, 'validation_error', 'no body');
      const form = await api(t.key, '/leads', { raw: 'phone=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expectError(form, 415, 'unsupported_media_type', 'a form');
      expect(await total()).toBe(before);
    });

    it('refuses an eventType of 500 characters or with forbidden characters (400), an unmapped one 422 event_route_not_found', async () => {
      const long = 'e'.repeat(500);
      for (const [what, res] of [
        ['POST /events, 500 characters', await event(t.key, { eventType: long, phone: phone(), consent })],
        ['POST /events, a space', await event(t.key, { eventType: 'deal won', phone: phone(), consent })],
        ['POST /events, empty', await event(t.key, { eventType: '', phone: phone(), consent })],
        ['POST /event-routes, 500 characters', await api(t.key, '/event-routes', { body: { eventType: long, campaignId: campaign.id } })],
        ['DELETE /event-routes, 500 characters', await api(t.key, `/event-routes?eventType=${long}`, { method: 'DELETE' })],
        ['DELETE /event-routes without eventType', await api(t.key, '/event-routes', { method: 'DELETE' })],
      ] as const) {
        expectError(res, 400, 'validation_error', what);
        expect({ what, named: paths(res).some((p) => /eventType$/.test(p)) }).toEqual({ what, named: true });
      }
      expectError(await event(t.key, { eventType: 'never.mapped', phone: phone(), consent, channel: 'call' }), 422, 'event_route_not_found');
      expectError(await event(t.key, { eventType: 'deal.won', campaignId: campaign.id, phone: phone(), consent }), 400, 'validation_error', 'campaignId in an event');
    });

    it('refuses an event route to another tenant’s or an unknown campaign with 422 campaign_not_found', async () => {
      const foreign = await running(other.tenantId);
      expectError(await api(t.key, '/event-routes', { body: { eventType: 'deal.won', campaignId: foreign.id } }), 422, 'campaign_not_found', 'foreign');
      expectError(await api(t.key, '/event-routes', { body: { eventType: 'deal.won', campaignId: FOREIGN_ID } }), 422, 'campaign_not_found', 'unknown');
      expectError(await api(t.key, '/event-routes', { body: { eventType: 'deal.won', campaignId: campaign.id, extra: 1 } }), 400, 'validation_error', 'unknown field');
      expect((await api(t.key, '/event-routes')).body).toEqual({ routes: [] });
    });

    it('refuses ids that are not ids in paths with 400, before any service is asked', async () => {
      for (const [what, method, path, body] of [
        ['GET /campaigns/{id}', 'GET', '/campaigns/not-an-id', undefined],
        ['GET /campaigns/{id}/contacts', 'GET', '/campaigns/123/contacts', undefined],
        ['GET /contacts/{id}', 'GET', '/contacts/zzzzzzzzzzzzzzzzzzzzzzzz', undefined],
        ['DELETE /contacts/{id}', 'DELETE', '/contacts/not-an-id', undefined],
        ['POST /contacts/{id}/cancel', 'POST', '/contacts/not-an-id/cancel', undefined],
        ['POST /contacts/{id}/followups', 'POST', '/contacts/not-an-id/followups', { scheduledAt: new Date(Date.now() + 3600_000).toISOString() }],
        ['GET /contacts/{id}, 25 characters', 'GET', `/contacts/${FOREIGN_ID}0`, undefined],
      ] as const) {
        const res = await api(t.key, path, { method, ...(body && { body }) });
        expectError(res, 400, 'validation_error', what);
        expect({ what, named: paths(res).some((p) => /id$/.test(p)) }).toEqual({ what, named: true });
      }
      const number = phone();
      for (const [what, path, body, named] of [
        ['start, campaign id', `/tenants/${t.tenantId}/campaigns/not-an-id/start`, undefined, /campaignId$/],
        ['start, tenant id', `/tenants/not-a-tenant/campaigns/${campaign.id}/start`, undefined, /tenantId$/],
        ['campaigns, tenant id', '/tenants/not-a-tenant/campaigns', { name: 'x' }, /tenantId$/],
        ['templates, tenant id', '/tenants/not-a-tenant/omni-templates', { channel: 'email', name: 'x', body: 'x' }, /tenantId$/],
        ['do-not-call, tenant id', '/tenants/not-a-tenant/do-not-call', { phone: number }, /tenantId$/],
      ] as const) {
        const res = await call(`${gw}/admin/v1${path}`, { admin: true, method: 'POST', ...(body && { body }) });
        expectError(res, 400, 'validation_error', what);
        expect({ what, named: paths(res).some((p) => named.test(p)) }).toEqual({ what, named: true });
      }
      expectError(await admin('/tenants/not-a-tenant/messages'), 400, 'validation_error', 'messages, tenant id');
    });

    it('answers another tenant’s contact and campaign 404 not_found on every route (never 403), and changes nothing', async () => {
      const res = await lead(t.key, callLead(campaign.id));
      const id = res.body.contactId;
      for (const [method, path, body] of [
        ['GET', `/contacts/${id}`, undefined],
        ['DELETE', `/contacts/${id}`, undefined],
        ['POST', `/contacts/${id}/cancel`, undefined],
        ['POST', `/contacts/${id}/followups`, { scheduledAt: new Date(Date.now() + 3600_000).toISOString() }],
        ['GET', `/campaigns/${campaign.id}`, undefined],
        ['GET', `/campaigns/${campaign.id}/contacts`, undefined],
        ['GET', `/contacts/${FOREIGN_ID}`, undefined],
        ['GET', `/campaigns/${FOREIGN_ID}`, undefined],
      ] as const) {
        const r = await api(other.key, path, { method, ...(body && { body }) });
        expectError(r, 404, 'not_found', `${method} ${path}`);
      }
      expect(JSON.stringify((await api(other.key, '/campaigns?limit=100')).body)).not.toContain(campaign.id);
      expect((await contact(t.key, id)).body.contact).toMatchObject({ id, status: 'queued' });
      // The operator cannot start one tenant's campaign under another tenant either.
      const draft = await createCampaign(t.tenantId, { name: 'Mine' });
      expectError(await startCampaign(other.tenantId, draft.body.campaign.id), 404, 'not_found', 'start under another tenant');
      expect((await api(t.key, `/campaigns/${draft.body.campaign.id}`)).body.campaign.status).toBe('draft');
      expectError(await startCampaign(t.tenantId, FOREIGN_ID), 404, 'not_found', 'start an unknown campaign');
    });

    it('names a refused field the same way whichever layer refuses it: details paths under body., as for every gateway-checked field', async () => {
      // The gateway names body fields `body.<field>` (credits and companies suites rely on it); the
      // same field refused by the leads service must not change its name in the same endpoint.
      const asGateway = await lead(t.key, callLead(campaign.id, { phone: 14155550123 }));
      const someone = (await lead(t.key, callLead(campaign.id))).body.contactId;
      expect(paths(asGateway)).toEqual(['body.phone']);
      const cases: [string, Promise<CallResult>, string[]][] = [
        ['phone in no numbering plan', lead(t.key, callLead(campaign.id, { phone: '+15551234567' })), ['body.phone']],
        ['capturedAt in the future', lead(t.key, callLead(campaign.id, { consent: { outboundCall: true, capturedAt: new Date(Date.now() + 3600_000).toISOString() } })), ['body.consent.capturedAt']],
        ['a missing placeholder value', lead(t.key, { campaignId: campaign.id, phone: phone(), channel: 'whatsapp', whatsappTemplateId: wa.id, whatsappParams: ['Ada'] }), ['body.whatsappParams.2']],
        ['a foreign template id', lead(t.key, { campaignId: campaign.id, phone: phone(), channel: 'whatsapp', whatsappTemplateId: FOREIGN_ID, whatsappParams: ['a', 'b'] }), ['body.whatsappTemplateId']],
        ['a campaign window ending before it starts', createCampaign(t.tenantId, { name: 'x', callingWindow: { start: '21:00', end: '08:00' } }), ['body.callingWindow.end']],
        ['a follow-up in the past', api(t.key, `/contacts/${someone}/followups`, { body: { scheduledAt: new Date(Date.now() - 60_000).toISOString() } }), ['body.scheduledAt']],
      ];
      const seen: { what: string; status: number; paths: string[] }[] = [];
      for (const [what, pending, expected] of cases) {
        const res = await pending;
        seen.push({ what, status: res.status, paths: res.status === 400 ? paths(res) : expected });
      }
      expect(seen).toEqual(cases.map(([what, , expected]) => ({ what, status: 400, paths: expected })));
    });

    it('refuses bad list queries (400) and an unknown template channel', async () => {
      for (const qs of ['/campaigns?page=0', '/campaigns?limit=101', '/campaigns?limit=ten', `/campaigns/${campaign.id}/contacts?limit=0`, '/omni/templates?channel=sms', '/omni/templates?channel=call']) {
        expectError(await api(t.key, qs), 400, 'validation_error', qs);
      }
      expectError(await admin(`/tenants/${t.tenantId}/messages?channel=call`), 400, 'validation_error', 'messages ?channel=call');
    });
  });

  describe('scopes', () => {
    it('answers POST /leads without leads:write 403 missing [leads:write], and GET /campaigns without leads:read 403 missing [leads:read]', async () => {
      const readOnly = await fresh('live', ['leads:read']);
      const writeOnly = await fresh('live', ['leads:write']);
      const campaign = await running(readOnly.tenantId);

      const post = await lead(readOnly.key, callLead(campaign.id));
      expectError(post, 403, 'forbidden');
      expect(post.body.missing).toEqual(['leads:write']);
      const get = await api(writeOnly.key, '/campaigns');
      expectError(get, 403, 'forbidden');
      expect(get.body.missing).toEqual(['leads:read']);

      // Every route of the area names the scope it needs; the check comes before validation.
      const id = FOREIGN_ID;
      for (const [method, path] of [
        ['POST', '/events'],
        ['POST', '/event-routes'],
        ['DELETE', '/event-routes?eventType=x'],
        ['POST', `/contacts/${id}/cancel`],
        ['POST', `/contacts/${id}/followups`],
        ['DELETE', `/contacts/${id}`],
        ['POST', '/leads'],
      ] as const) {
        const r = await api(readOnly.key, path, { method, ...(method === 'POST' && { body: {} }) });
        expect({ method, path, status: r.status, missing: r.body.missing }).toEqual({ method, path, status: 403, missing: ['leads:write'] });
      }
      for (const path of ['/campaigns', `/campaigns/${id}`, `/campaigns/${id}/contacts`, `/contacts/${id}`, '/omni/templates', '/event-routes']) {
        const r = await api(writeOnly.key, path);
        expect({ path, status: r.status, missing: r.body.missing }).toEqual({ path, status: 403, missing: ['leads:read'] });
      }
      // Nothing was stored by the refused lead; a read key sees that.
      expect((await api(readOnly.key, `/campaigns/${campaign.id}/contacts`)).body.pagination.total).toBe(0);
      // No key: 401; the operator token is no tenant key.
      expectError(await call(`${gw}/api/v1/leads`, { body: callLead(campaign.id) }), 401, 'unauthorized');
      expectError(await call(`${gw}/api/v1/campaigns`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }), 401, 'unauthorized');
    });
  });

  describe('sandbox keys', () => {
    it('accepts a sandbox call lead as sandbox_accepted on an empty wallet: recorded with its evidence, nothing charged, held or sent', async () => {
      const t = await fresh();
      const sandbox = await sandboxKey(t.tenantId);
      const campaign = await running(t.tenantId);
      const wa = await whatsappTemplate(t.tenantId);

      const res = await lead(sandbox, callLead(campaign.id));
      expect(res.status).toBe(202);
      expect(res.body).toEqual({ status: 'sandbox_accepted', contactId: expect.stringMatching(HEX_ID), campaignId: campaign.id, channels: ['call'], contactStatus: 'sandbox_accepted', nextAttemptAt: null });
      // Sandbox and live keys see one tenant: the live key reads the sandbox contact.
      for (const key of [sandbox, t.key]) {
        const c = (await contact(key, res.body.contactId)).body.contact;
        expect(c).toMatchObject({ status: 'sandbox_accepted', sandbox: true, attempts: 0, nextAttemptAt: null, compliance: { doNotCall: { tenant: false, platform: false }, callingWindow: { open: true } } });
      }
      expect((await api(t.key, '/credits')).body).toEqual({ balance: 0, available: 0, held: 0, updatedAt: null });
      expect((await api(t.key, '/credits/transactions')).body.pagination.total).toBe(0);
      // The same lead with a live key on the empty wallet is refused.
      expectError(await lead(t.key, callLead(campaign.id)), 402, 'insufficient_credits');

      // A sandbox WhatsApp lead: accepted, and no message is recorded.
      const msg = await lead(sandbox, { campaignId: campaign.id, phone: phone(), channel: 'whatsapp', whatsappTemplateId: wa.id, whatsappParams: ['Ada', 'Monday'] });
      expect(msg.status).toBe(202);
      expect(msg.body).toMatchObject({ status: 'sandbox_accepted', contactStatus: 'sandbox_accepted', channels: ['whatsapp'] });
      // A live WhatsApp lead of the same tenant afterwards: once its message is sent, the sandbox
      // one has had every chance to appear, and has not.
      const live = await lead(t.key, { campaignId: campaign.id, phone: phone(), channel: 'whatsapp', whatsappTemplateId: wa.id, whatsappParams: ['Bob', 'Friday'] });
      expect(live.status).toBe(202);
      const all = await eventually('the live message sent', async () => (await messages(t.tenantId)).body.messages as Json[], 45_000, {
        done: (ms) => ms.some((m) => m.contactId === live.body.contactId && m.status === 'sent'),
        intervalMs: 200,
      });
      expect(all.map((m) => m.contactId)).toEqual([live.body.contactId]);
      expect((await contact(t.key, msg.body.contactId)).body.contact.status).toBe('sandbox_accepted');
      // Sandbox rules are the live rules: a missing placeholder is still 400.
      expectError(await lead(sandbox, { campaignId: campaign.id, phone: phone(), channel: 'whatsapp', whatsappTemplateId: wa.id, whatsappParams: ['Ada'] }), 400, 'validation_error', 'sandbox missing value');
      // The message is recorded as sent a moment before its contact counts as completed.
      const stats = await eventually('the live contact completed', async () => (await api(t.key, `/campaigns/${campaign.id}`)).body.campaign.stats as Json, 45_000, { done: (st) => st.completed === 1, intervalMs: 200 });
      expect(stats).toEqual({ contacts: 3, queued: 0, completed: 1, failed: 0 });
    });

    it('still refuses a do-not-call number, missing consent and a draft campaign to a sandbox key', async () => {
      const t = await fresh();
      const sandbox = await sandboxKey(t.tenantId);
      const campaign = await running(t.tenantId);
      const listed = phone();
      const platformListed = phone();
      await dncTenant(t.tenantId, listed);
      await dncPlatform(platformListed);
      const res = await lead(sandbox, callLead(campaign.id, { phone: listed }));
      expectError(res, 422, 'do_not_call');
      expect(res.body.details).toEqual([{ path: expect.stringMatching(/phone$/), message: expect.stringMatching(/tenant/) }]);
      expectError(await lead(sandbox, callLead(campaign.id, { phone: platformListed })), 422, 'do_not_call', 'platform');
      expectError(await lead(sandbox, callLead(campaign.id, { consent: { outboundCall: false } })), 422, 'consent_required');
      const draft = await createCampaign(t.tenantId, { name: 'draft' });
      expectError(await lead(sandbox, callLead(draft.body.campaign.id)), 409, 'campaign_not_running');
      expect((await api(sandbox, `/campaigns/${campaign.id}/contacts`)).body.pagination.total).toBe(0);
    });
  });

  describe('Idempotency-Key on POST /leads', () => {
    let t: { tenantId: string; key: string };
    beforeAll(async () => {
      t = await fresh();
      await topUp(t.tenantId, 100_000);
    });

    it('replays the first answer for the same key and body with Idempotent-Replayed: true; another body is 422 idempotency_key_reused', async () => {
      const campaign = await running(t.tenantId);
      const body = callLead(campaign.id);
      const key = `crm-${randomBytes(4).toString('hex')}`;
      const first = await lead(t.key, body, { 'Idempotency-Key': key });
      expect(first.status).toBe(202);
      expect(first.headers.get('idempotent-replayed')).toBeNull();
      const replay = await lead(t.key, body, { 'Idempotency-Key': key });
      expect(replay.status).toBe(202);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(replay.body).toEqual(first.body);

      const reused = await lead(t.key, { ...body, name: 'Someone else' }, { 'Idempotency-Key': key });
      expectError(reused, 422, 'idempotency_key_reused');
      // The same key in the sandbox mode is another key.
      const sandbox = await sandboxKey(t.tenantId);
      const sb = await lead(sandbox, body, { 'Idempotency-Key': key });
      expect(sb.status).toBe(202);
      expect(sb.headers.get('idempotent-replayed')).toBeNull();
      expect(sb.body.status).toBe('sandbox_accepted');
      expect(sb.body.contactId).not.toBe(first.body.contactId);

      const contacts = (await api(t.key, `/campaigns/${campaign.id}/contacts`)).body;
      expect(contacts.pagination.total).toBe(2);
      expect(contacts.contacts.map((c: Json) => c.id).sort()).toEqual([first.body.contactId, sb.body.contactId].sort());
      // A refusal is replayed as well.
      const refusedKey = `refused-${randomBytes(4).toString('hex')}`;
      const refusedBody = { ...body, phone: phone(), consent: { outboundCall: false } };
      const refused = await lead(t.key, refusedBody, { 'Idempotency-Key': refusedKey });
      expectError(refused, 422, 'consent_required');
      const refusedAgain = await lead(t.key, refusedBody, { 'Idempotency-Key': refusedKey });
      expect(refusedAgain.status).toBe(422);
      expect(refusedAgain.headers.get('idempotent-replayed')).toBe('true');
      expect(refusedAgain.body).toEqual(refused.body);
      expectError(await lead(t.key, body, { 'Idempotency-Key': 'k'.repeat(256) }), 400, 'validation_error', 'a key over 255 characters');
    });

    it(
      `makes ${BURST} concurrent POST /leads with one key and body exactly one contact: every answer 202 (replayed) or 409 idempotency_in_progress`,
      async () => {
        const campaign = await running(t.tenantId);
        const body = callLead(campaign.id);
        const key = `burst-${randomBytes(4).toString('hex')}`;
        const answers = await Promise.all(Array.from({ length: BURST }, () => lead(t.key, body, { 'Idempotency-Key': key })));

        const summary = new Map<string, number>();
        for (const a of answers) {
          const kind = a.status === 202 ? (a.headers.get('idempotent-replayed') === 'true' ? '202 replayed' : '202 first') : `${a.status} ${a.body?.reasonCode}`;
          summary.set(kind, (summary.get(kind) ?? 0) + 1);
        }
        const kinds = Object.fromEntries(summary);
        expect(Object.keys(kinds).filter((k) => !['202 first', '202 replayed', '409 idempotency_in_progress'].includes(k))).toEqual([]);
        expect(kinds['202 first']).toBe(1);
        const accepted = answers.filter((a) => a.status === 202);
        expect(new Set(accepted.map((a) => JSON.stringify(a.body))).size).toBe(1);
        for (const a of answers.filter((x) => x.status === 409)) expectError(a, 409, 'idempotency_in_progress');

        const contacts = (await api(t.key, `/campaigns/${campaign.id}/contacts`)).body;
        expect(contacts.pagination.total).toBe(1);
        expect(contacts.contacts[0].id).toBe(accepted[0]!.body.contactId);
        // After the burst, the key replays.
        const after = await lead(t.key, body, { 'Idempotency-Key': key });
        expect(after.status).toBe(202);
        expect(after.headers.get('idempotent-replayed')).toBe('true');
        expect(after.body).toEqual(accepted[0]!.body);
      },
      60_000 + BURST * 100,
    );
  });

  describe('contacts', () => {
    let t: { tenantId: string; key: string };
    let campaign: Json;
    let wa: Json;
    beforeAll(async () => {
      t = await fresh();
      await topUp(t.tenantId, 1_000);
      campaign = await running(t.tenantId);
      wa = await whatsappTemplate(t.tenantId);
    });

    it('cancels with an empty body or {}: cancelled, nextAttemptAt cleared; again answers it cancelled', async () => {
      const a = await lead(t.key, callLead(campaign.id));
      const b = await lead(t.key, callLead(campaign.id));
      // No body and no Content-Type.
      const empty = await call(`${gw}/api/v1/contacts/${a.body.contactId}/cancel`, { key: t.key, method: 'POST' });
      expect(empty.status).toBe(200);
      expect(empty.body.contact).toMatchObject({ id: a.body.contactId, status: 'cancelled', nextAttemptAt: null });
      const braces = await api(t.key, `/contacts/${b.body.contactId}/cancel`, { body: {} });
      expect(braces.status).toBe(200);
      expect(braces.body.contact).toMatchObject({ id: b.body.contactId, status: 'cancelled' });
      expect((await contact(t.key, a.body.contactId)).body.contact).toEqual(empty.body.contact);
      const again = await api(t.key, `/contacts/${a.body.contactId}/cancel`, { method: 'POST' });
      expect(again.status).toBe(200);
      expect(again.body.contact.status).toBe('cancelled');
      // Something in the body is refused.
      expectError(await api(t.key, `/contacts/${a.body.contactId}/cancel`, { body: { reason: 'x' } }), 400, 'validation_error', 'a body');
      // A scheduled contact loses its nextAttemptAt.
      const closed = await running(t.tenantId, { callingWindow: { start: '00:00', end: '24:00', days: ALL_DAYS.filter((d) => d !== local(new Date(), 'America/Los_Angeles').weekday) } });
      const s = await lead(t.key, callLead(closed.id));
      expect(s.body.contactStatus).toBe('scheduled');
      const cs = await api(t.key, `/contacts/${s.body.contactId}/cancel`, { method: 'POST' });
      expect(cs.body.contact).toMatchObject({ status: 'cancelled', nextAttemptAt: null });
      // Cancelled contacts count as contacts only.
      expect((await api(t.key, `/campaigns/${closed.id}`)).body.campaign.stats).toEqual({ contacts: 1, queued: 0, completed: 0, failed: 0 });
    });

    it('schedules a follow-up (201), refusing one in the past, on a channel the contact lacks, or on a cancelled contact', async () => {
      const a = await lead(t.key, callLead(campaign.id));
      const id = a.body.contactId;
      const at = new Date(Date.now() + 2 * 3600_000).toISOString();
      const res = await api(t.key, `/contacts/${id}/followups`, { body: { scheduledAt: at, note: 'call back after the demo' } });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        followup: { id: expect.stringMatching(HEX_ID), contactId: id, scheduledAt: at, channel: 'call', note: 'call back after the demo', status: 'scheduled', createdAt: expect.stringMatching(ISO) },
      });
      // Up to a year ahead, on a channel named explicitly.
      const late = new Date(Date.now() + 364 * 24 * 3600_000).toISOString();
      const explicit = await api(t.key, `/contacts/${id}/followups`, { body: { scheduledAt: late, channel: 'call' } });
      expect(explicit.status).toBe(201);
      expect(explicit.body.followup).toMatchObject({ scheduledAt: late, channel: 'call', note: null, status: 'scheduled' });
      expect(explicit.body.followup.id).not.toBe(res.body.followup.id);

      for (const [what, body] of [
        ['in the past', { scheduledAt: new Date(Date.now() - 60_000).toISOString() }],
        ['now-ish (a second ago)', { scheduledAt: new Date(Date.now() - 1_000).toISOString() }],
        ['more than a year ahead', { scheduledAt: new Date(Date.now() + 400 * 24 * 3600_000).toISOString() }],
        ['not a date-time', { scheduledAt: 'tomorrow' }],
        ['no scheduledAt', { note: 'x' }],
        ['a channel of the contact it lacks', { scheduledAt: at, channel: 'whatsapp' }],
        ['an unknown channel', { scheduledAt: at, channel: 'sms' }],
        ['an unknown field', { scheduledAt: at, priority: 1 }],
      ] as const) {
        const r = await api(t.key, `/contacts/${id}/followups`, { body });
        expectError(r, 400, 'validation_error', what);
      }
      const wrongChannel = await api(t.key, `/contacts/${id}/followups`, { body: { scheduledAt: at, channel: 'email' } });
      expect(paths(wrongChannel).some((p) => /channel$/.test(p))).toBe(true);

      // A WhatsApp-only contact's follow-up defaults to WhatsApp.
      const w = await lead(t.key, { campaignId: campaign.id, phone: phone(), channel: 'whatsapp', whatsappTemplateId: wa.id, whatsappParams: ['a', 'b'] });
      const wf = await api(t.key, `/contacts/${w.body.contactId}/followups`, { body: { scheduledAt: at } });
      expect(wf.status).toBe(201);
      expect(wf.body.followup.channel).toBe('whatsapp');
      expectError(await api(t.key, `/contacts/${w.body.contactId}/followups`, { body: { scheduledAt: at, channel: 'call' } }), 400, 'validation_error', 'call on a whatsapp contact');

      expect((await api(t.key, `/contacts/${id}/cancel`, { method: 'POST' })).status).toBe(200);
      expectError(await api(t.key, `/contacts/${id}/followups`, { body: { scheduledAt: at } }), 409, 'conflict', 'cancelled contact');
    });

    it('sends a due WhatsApp follow-up again (the scheduler), and drops the follow-ups of contacts cancelled, deleted or sandbox', async () => {
      const whatsapp = (key: string, name: string) => lead(key, { campaignId: campaign.id, phone: phone(), channel: 'whatsapp', whatsappTemplateId: wa.id, whatsappParams: [name, 'Friday'] });
      const sandbox = await sandboxKey(t.tenantId);
      const kept = await whatsapp(t.key, 'Kept');
      const cancelled = await whatsapp(t.key, 'Cancelled');
      const deleted = await whatsapp(t.key, 'Deleted');
      const sb = await whatsapp(sandbox, 'Sandbox');
      for (const r of [kept, cancelled, deleted, sb]) expect(r.status).toBe(202);
      const ids = [kept, cancelled, deleted].map((r) => r.body.contactId);
      await eventually('the first messages sent', async () => (await messages(t.tenantId)).body.messages as Json[], 45_000, {
        done: (ms) => ids.every((id) => ms.some((m) => m.contactId === id && m.status === 'sent')),
        intervalMs: 200,
      });

      const due = new Date(Date.now() + 2_500).toISOString();
      for (const r of [kept, cancelled, deleted, sb]) {
        const f = await api(r === sb ? sandbox : t.key, `/contacts/${r.body.contactId}/followups`, { body: { scheduledAt: due } });
        expect(f.status).toBe(201);
        expect(f.body.followup).toMatchObject({ channel: 'whatsapp', status: 'scheduled', scheduledAt: due });
      }
      expect((await api(t.key, `/contacts/${cancelled.body.contactId}/cancel`, { method: 'POST' })).status).toBe(200);
      expect((await api(t.key, `/contacts/${deleted.body.contactId}`, { method: 'DELETE' })).status).toBe(204);

      const count = (ms: Json[], id: string) => ms.filter((m) => m.contactId === id).length;
      const after = await eventually('the follow-up sent', async () => (await messages(t.tenantId)).body.messages as Json[], 45_000, {
        done: (ms) => ms.filter((m) => m.contactId === kept.body.contactId && m.status === 'sent').length === 2,
        intervalMs: 200,
      });
      const twice = after.filter((m) => m.contactId === kept.body.contactId);
      expect(twice.map((m) => m.body)).toEqual(['Hi Kept, your appointment is on Friday.', 'Hi Kept, your appointment is on Friday.']);
      expect(new Set(twice.map((m) => m.id)).size).toBe(2);
      // Give the scheduler a few more rounds: the others stay as they were.
      await new Promise((r) => setTimeout(r, 2_000));
      const final = (await messages(t.tenantId)).body.messages as Json[];
      expect({ cancelled: count(final, cancelled.body.contactId), deleted: count(final, deleted.body.contactId), sandbox: count(final, sb.body.contactId) }).toEqual({ cancelled: 1, deleted: 0, sandbox: 0 });
      expect((await contact(t.key, kept.body.contactId)).body.contact.status).toBe('messaged');
      expect((await contact(t.key, cancelled.body.contactId)).body.contact.status).toBe('cancelled');
    });

    it('dials a scheduled contact when its window opens, checking again first: one cancelled stays cancelled, one put on the do-not-call list meanwhile fails', async () => {
      // A one-minute window opening at the next minute in Los Angeles (whole-hour offset: its
      // seconds are UTC's). Too close to a minute's end, wait for the next one.
      if (new Date().getUTCSeconds() >= 54) await new Promise((r) => setTimeout(r, (61 - new Date().getUTCSeconds()) * 1_000));
      const now = new Date();
      const [h, m] = local(now, 'America/Los_Angeles').time.split(':').map(Number) as [number, number];
      const opening = (h * 60 + m + 1) % 1440;
      const hhmm = (x: number) => `${String(Math.floor(x / 60)).padStart(2, '0')}:${String(x % 60).padStart(2, '0')}`;
      const window = { start: hhmm(opening), end: opening === 1439 ? '24:00' : hhmm(opening + 1) };
      const c = await running(t.tenantId, { callingWindow: window });
      const dialled = await lead(t.key, callLead(c.id));
      const cancelled = await lead(t.key, callLead(c.id));
      const listedPhone = phone();
      const listed = await lead(t.key, callLead(c.id, { phone: listedPhone }));
      for (const r of [dialled, cancelled, listed]) {
        expect(r.status).toBe(202);
        expect(r.body.contactStatus).toBe('scheduled');
        expect(local(new Date(r.body.nextAttemptAt), 'America/Los_Angeles').time).toBe(`${window.start}:00`);
        expect(Date.parse(r.body.nextAttemptAt) - now.getTime()).toBeLessThanOrEqual(61_000);
      }
      expect((await api(t.key, `/contacts/${cancelled.body.contactId}/cancel`, { method: 'POST' })).status).toBe(200);
      expect((await dncTenant(t.tenantId, listedPhone)).status).toBe(201);

      const due = Date.parse(dialled.body.nextAttemptAt);
      const queued = await eventually('the scheduled dial requested', () => contact(t.key, dialled.body.contactId), 90_000, { done: (r) => r.body.contact.status !== 'scheduled', intervalMs: 200 });
      expect(Date.now()).toBeGreaterThanOrEqual(due);
      expect(queued.body.contact).toMatchObject({ status: 'queued', nextAttemptAt: null, attempts: 0, endReason: null });
      const failed = await eventually('the listed contact stopped', () => contact(t.key, listed.body.contactId), 15_000, { done: (r) => r.body.contact.status !== 'scheduled', intervalMs: 200 });
      expect(failed.body.contact).toMatchObject({ status: 'failed', endReason: 'do_not_call', nextAttemptAt: null, attempts: 0 });
      // Its compliance evidence is the ingest decision, kept as it was.
      expect(failed.body.contact.compliance.doNotCall).toEqual({ tenant: false, platform: false });
      await new Promise((r) => setTimeout(r, 1_500));
      expect((await contact(t.key, cancelled.body.contactId)).body.contact).toMatchObject({ status: 'cancelled', nextAttemptAt: null, attempts: 0 });
      expect((await api(t.key, `/campaigns/${c.id}`)).body.campaign.stats).toEqual({ contacts: 3, queued: 1, completed: 0, failed: 1 });
    }, 150_000);

    it('deletes a contact (204): then 404 to GET, DELETE and cancel; its messages are erased too', async () => {
      const w = await lead(t.key, { campaignId: campaign.id, phone: phone(), name: 'Erase Me', channel: 'whatsapp', whatsappTemplateId: wa.id, whatsappParams: ['Erase', 'Me'] });
      expect(w.status).toBe(202);
      const id = w.body.contactId;
      await eventually('its message', async () => (await messages(t.tenantId)).body.messages as Json[], 45_000, { done: (ms) => ms.some((m) => m.contactId === id), intervalMs: 200 });
      const before = (await api(t.key, `/campaigns/${campaign.id}/contacts?limit=100`)).body.pagination.total;

      const del = await api(t.key, `/contacts/${id}`, { method: 'DELETE' });
      expect(del.status).toBe(204);
      expect(del.body).toBeUndefined();
      expectError(await contact(t.key, id), 404, 'not_found', 'GET after delete');
      expectError(await api(t.key, `/contacts/${id}`, { method: 'DELETE' }), 404, 'not_found', 'DELETE again');
      expectError(await api(t.key, `/contacts/${id}/cancel`, { method: 'POST' }), 404, 'not_found', 'cancel after delete');
      const list = (await api(t.key, `/campaigns/${campaign.id}/contacts?limit=100`)).body;
      expect(list.pagination.total).toBe(before - 1);
      expect(list.contacts.map((c: Json) => c.id)).not.toContain(id);
      // Wait past any in-flight send: the message stays erased.
      await new Promise((r) => setTimeout(r, 1_500));
      const left = (await messages(t.tenantId)).body.messages as Json[];
      expect(left.filter((m) => m.contactId === id)).toEqual([]);
      expect(JSON.stringify(left)).not.toContain('Hi Erase');
    });
  });

  describe('event routes and POST /events', () => {
    it('routes an event type (201), replaces its campaign keeping one route, lists it, delivers events to it, and removes it (204, then 404)', async () => {
      const t = await fresh();
      await topUp(t.tenantId, 1_000);
      const first = await running(t.tenantId);
      const second = await running(t.tenantId);

      const created = await api(t.key, '/event-routes', { body: { eventType: 'deal.won', campaignId: first.id } });
      expect(created.status).toBe(201);
      expect(created.body).toEqual({ route: { eventType: 'deal.won', campaignId: first.id, createdAt: expect.stringMatching(ISO) } });
      const replaced = await api(t.key, '/event-routes', { body: { eventType: 'deal.won', campaignId: second.id } });
      expect(replaced.status).toBe(201);
      expect(replaced.body).toEqual({ route: { eventType: 'deal.won', campaignId: second.id, createdAt: created.body.route.createdAt } });
      const another = await api(t.key, '/event-routes', { body: { eventType: 'form:submitted', campaignId: first.id } });
      expect(another.status).toBe(201);
      const listed = await api(t.key, '/event-routes');
      expect(listed.status).toBe(200);
      expect(listed.body).toEqual({ routes: [replaced.body.route, another.body.route] }); // oldest first

      // An event of a mapped type is a lead of the routed campaign.
      const number = phone();
      const ev = await event(t.key, { eventType: 'deal.won', phone: number, name: 'Ada', channel: 'call', consent });
      expect(ev.status).toBe(202);
      expect(ev.body).toEqual({ status: 'accepted', contactId: expect.stringMatching(HEX_ID), campaignId: second.id, channels: ['call'], contactStatus: 'queued', nextAttemptAt: null });
      expect((await api(t.key, `/campaigns/${second.id}/contacts`)).body.contacts.map((c: Json) => c.id)).toEqual([ev.body.contactId]);
      expect((await api(t.key, `/campaigns/${first.id}/contacts`)).body.pagination.total).toBe(0);
      expect((await contact(t.key, ev.body.contactId)).body.contact).toMatchObject({ campaignId: second.id, phone: number, name: 'Ada', status: 'queued' });
      const viaOther = await event(t.key, { eventType: 'form:submitted', phone: phone(), consent });
      expect(viaOther.status).toBe(202);
      expect(viaOther.body.campaignId).toBe(first.id);
      // Events follow the lead rules.
      expectError(await event(t.key, { eventType: 'deal.won', phone: phone(), channel: 'call', consent: { outboundCall: false } }), 422, 'consent_required');

      const removed = await api(t.key, '/event-routes?eventType=deal.won', { method: 'DELETE' });
      expect(removed.status).toBe(204);
      expectError(await api(t.key, '/event-routes?eventType=deal.won', { method: 'DELETE' }), 404, 'not_found', 'removed twice');
      expectError(await event(t.key, { eventType: 'deal.won', phone: phone(), consent }), 422, 'event_route_not_found', 'after removal');
      expect((await api(t.key, '/event-routes')).body).toEqual({ routes: [another.body.route] });

      // Routes are the tenant's: another tenant has none, and its events of the same type are unmapped.
      const other = await fresh();
      expect((await api(other.key, '/event-routes')).body).toEqual({ routes: [] });
      expectError(await event(other.key, { eventType: 'form:submitted', phone: phone(), consent }), 422, 'event_route_not_found', 'other tenant');
      expectError(await api(other.key, '/event-routes?eventType=form:submitted', { method: 'DELETE' }), 404, 'not_found', 'other tenant delete');
    });

    it('answers an event routed to a draft campaign 409 campaign_not_running', async () => {
      const t = await fresh();
      const draft = await createCampaign(t.tenantId, { name: 'Not started' });
      const route = await api(t.key, '/event-routes', { body: { eventType: 'lead.created', campaignId: draft.body.campaign.id } });
      expect(route.status).toBe(201);
      expectError(await event(t.key, { eventType: 'lead.created', phone: phone(), consent }), 409, 'campaign_not_running');
    });
  });

  describe('the operator API', () => {
    it('adds to the platform’s and a tenant’s do-not-call list: 201 created, then 201 created false with the first entry', async () => {
      const t = await fresh();
      const raw = `+1 (415) 555-${String(nextLine++).padStart(4, '0')}`;
      const e164 = raw.replace(/[^+0-9]/g, '');
      const first = await dncPlatform(raw);
      expect(first.status).toBe(201);
      expect(first.body).toEqual({ entry: { phone: e164, list: 'platform', source: 'operator', createdAt: expect.stringMatching(ISO) }, created: true });
      const second = await dncPlatform(e164);
      expect(second.status).toBe(201);
      expect(second.body).toEqual({ entry: first.body.entry, created: false });

      const tenantFirst = await dncTenant(t.tenantId, e164);
      expect(tenantFirst.status).toBe(201);
      expect(tenantFirst.body).toEqual({ entry: { phone: e164, list: 'tenant', source: 'operator', createdAt: expect.stringMatching(ISO) }, created: true });
      const tenantSecond = await dncTenant(t.tenantId, raw);
      expect(tenantSecond.status).toBe(201);
      expect(tenantSecond.body).toEqual({ entry: tenantFirst.body.entry, created: false });
      // Another tenant's list is its own.
      const other = await fresh();
      expect((await dncTenant(other.tenantId, e164)).body.created).toBe(true);

      for (const [what, res] of [
        ['platform, no plus', await dncPlatform('4155550123')],
        ['platform, not a number', await dncPlatform('+15551234567')],
        ['tenant, letters', await dncTenant(t.tenantId, '+1-800-FLOWERS')],
        ['platform, unknown field', await admin('/do-not-call', { phone: e164, reason: 'x' })],
        ['platform, no phone', await admin('/do-not-call', {})],
      ] as const) {
        expectError(res, 400, 'validation_error', what);
      }
      expectError(await dncTenant(FOREIGN_ID, e164), 404, 'not_found', 'unknown tenant');
    });

    it('validates a new campaign: 400 for start after end, an unknown day, maxCallSeconds 5 and the other bounds', async () => {
      const t = await fresh();
      const cases: [string, Json, RegExp][] = [
        ['start after end', { callingWindow: { start: '21:00', end: '08:00' } }, /callingWindow\.end$/],
        ['start equal to end', { callingWindow: { start: '09:00', end: '09:00' } }, /callingWindow\.end$/],
        ['an unknown day', { callingWindow: { start: '08:00', end: '21:00', days: ['mon', 'funday'] } }, /callingWindow\.days/],
        ['a repeated day', { callingWindow: { start: '08:00', end: '21:00', days: ['mon', 'mon'] } }, /callingWindow\.days/],
        ['no days', { callingWindow: { start: '08:00', end: '21:00', days: [] } }, /callingWindow\.days/],
        ['a time that is no time', { callingWindow: { start: '25:00', end: '26:00' } }, /callingWindow\.start$/],
        ['a window without end', { callingWindow: { start: '08:00' } }, /callingWindow\.end$/],
        ['maxCallSeconds 5', { maxCallSeconds: 5 }, /maxCallSeconds$/],
        ['maxCallSeconds 3601', { maxCallSeconds: 3601 }, /maxCallSeconds$/],
        ['maxCallSeconds 30.5', { maxCallSeconds: 30.5 }, /maxCallSeconds$/],
        ['maxAttempts 0', { maxAttempts: 0 }, /maxAttempts$/],
        ['maxAttempts 11', { maxAttempts: 11 }, /maxAttempts$/],
        ['retryAfterMinutes 0', { retryAfterMinutes: 0 }, /retryAfterMinutes$/],
        ['type csv', { type: 'csv' }, /type$/],
        ['no channels', { channels: [] }, /channels$/],
        ['a repeated channel', { channels: ['call', 'call'] }, /channels$/],
        ['an unknown channel', { channels: ['sms'] }, /channels/],
        ['an unknown field', { priority: 1 }, /.*/],
      ];
      for (const [what, extra, path] of cases) {
        const res = await createCampaign(t.tenantId, { name: 'Bad', ...extra });
        expectError(res, 400, 'validation_error', what);
        expect({ what, named: paths(res).some((p) => path.test(p)) }).toEqual({ what, named: true });
      }
      expectError(await createCampaign(t.tenantId, { name: '   ' }), 400, 'validation_error', 'a blank name');
      expectError(await createCampaign(t.tenantId, {}), 400, 'validation_error', 'no name');
      // Nothing was created; the bounds themselves are fine.
      const t2 = await fresh();
      expect((await api(t.key, '/campaigns')).body.pagination.total).toBe(0);
      const edge = await createCampaign(t2.tenantId, { name: 'Edges', callingWindow: { start: '00:00', end: '00:01', days: ['sun'] }, maxCallSeconds: 10, maxAttempts: 10, retryAfterMinutes: 10_080 });
      expect(edge.status).toBe(201);
      expect(edge.body.campaign).toMatchObject({ callingWindow: { always: false, start: '00:00', end: '00:01', days: ['sun'] }, maxCallSeconds: 10, maxAttempts: 10, retryAfterMinutes: 10_080 });
      expectError(await createCampaign(FOREIGN_ID, { name: 'Nobody’s' }), 404, 'not_found', 'unknown tenant');
    });

    it('validates templates: numbered WhatsApp placeholders, no WhatsApp subject, a known channel (400)', async () => {
      const t = await fresh();
      for (const [what, body] of [
        ['a named WhatsApp placeholder', { channel: 'whatsapp', name: 'x', body: 'Hi {{name}}' }],
        ['a WhatsApp subject', { channel: 'whatsapp', name: 'x', subject: 'Hi', body: 'Hi {{1}}' }],
        ['an sms template', { channel: 'sms', name: 'x', body: 'Hi' }],
        ['a blank body', { channel: 'email', name: 'x', body: '   ' }],
        ['a bad language', { channel: 'email', name: 'x', body: 'Hi', language: 'english!' }],
        ['an unknown field', { channel: 'email', name: 'x', body: 'Hi', from: 'me@example.com' }],
      ] as const) {
        expectError(await admin(`/tenants/${t.tenantId}/omni-templates`, body), 400, 'validation_error', what);
      }
      expect((await api(t.key, '/omni/templates')).body).toEqual({ templates: [] });
      expectError(await admin(`/tenants/${FOREIGN_ID}/omni-templates`, { channel: 'email', name: 'x', body: 'Hi' }), 404, 'not_found', 'unknown tenant');
      expectError(await admin(`/tenants/${FOREIGN_ID}/messages`), 404, 'not_found', 'messages of an unknown tenant');
    });

    it('refuses a wrong admin token or a tenant key with 401 unauthorized on the outbound operator routes', async () => {
      const t = await fresh();
      const draft = await createCampaign(t.tenantId, { name: 'Guarded' });
      const id = draft.body.campaign.id;
      // Fewer than the throttle's ten wrong tokens a minute from one address.
      const wrong = { authorization: 'Bearer not-the-admin-token-0123456789' };
      for (const [what, path, body] of [
        ['create a campaign', `/tenants/${t.tenantId}/campaigns`, { name: 'x' }],
        ['start a campaign', `/tenants/${t.tenantId}/campaigns/${id}/start`, undefined],
        ['platform do-not-call', '/do-not-call', { phone: phone() }],
        ['messages', `/tenants/${t.tenantId}/messages`, undefined],
      ] as const) {
        const res = await call(`${gw}/admin/v1${path}`, { headers: wrong, ...(body ? { body } : path.endsWith('start') ? { method: 'POST' } : {}) });
        expectError(res, 401, 'unauthorized', what);
      }
      const byKey = await call(`${gw}/admin/v1/tenants/${t.tenantId}/omni-templates`, { key: t.key, body: { channel: 'email', name: 'x', body: 'Hi' } });
      expectError(byKey, 401, 'unauthorized', 'a tenant key');
      expectError(await call(`${gw}/admin/v1/tenants/${t.tenantId}/do-not-call`, { body: { phone: phone() } }), 401, 'unauthorized', 'no token');
      // Nothing happened.
      expect((await api(t.key, `/campaigns/${id}`)).body.campaign.status).toBe('draft');
      expect((await api(t.key, '/campaigns')).body.pagination.total).toBe(1);
      expect((await api(t.key, '/omni/templates')).body.templates).toEqual([]);
    });
  });
});
