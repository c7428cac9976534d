// Over 300 lines because its cases share one started system (a few seconds to start per file); split by area only where that cost pays.
import { eventually } from '../harness/wait';
import {
  ISO,
  HEX_ID,
  ALL_DAYS,
  OPEN_ALL_DAY,
  phone,
  fresh,
  createCampaign,
  startCampaign,
  running,
  topUp,
  whatsappTemplate,
  emailTemplate,
  messages,
  api,
  lead,
} from './leads-setup';
import { contact, consent, callLead, local, type Json, useLeadsSystem } from './leads-setup';

// The leads suite (see leads-setup.ts): the CRM pattern as a tenant follows it.
describe('leads through the gateway and the leads service', () => {
  useLeadsSystem();

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
      expect(wa).toEqual({
        id: expect.stringMatching(HEX_ID),
        channel: 'whatsapp',
        name: 'Appointment reminder',
        language: 'en',
        subject: null,
        body: 'Hi {{1}}, your appointment is on {{2}}.',
        variables: ['1', '2'],
      });
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
      const accepted = await lead(t.key, {
        campaignId: campaign.id,
        phone: number,
        name: 'Ada Lovelace',
        channel: 'call',
        consent,
      });
      expect(accepted.status).toBe(202);
      expect(accepted.body).toEqual({
        status: 'accepted',
        contactId: expect.stringMatching(HEX_ID),
        campaignId: campaign.id,
        channels: ['call'],
        contactStatus: 'queued',
        nextAttemptAt: null,
      });

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
      expect(list.body).toEqual({
        campaigns: [withStats],
        pagination: { page: 1, limit: 25, total: 1, totalPages: 1, hasMore: false },
      });
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
      expect(past.body).toEqual({
        contacts: [],
        pagination: { page: 4, limit: 2, total: 5, totalPages: 3, hasMore: false },
      });

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
      expect(omni.body).toEqual({
        status: 'accepted',
        contactId: expect.stringMatching(HEX_ID),
        campaignId: campaign.id,
        channels: ['whatsapp', 'email'],
        contactStatus: 'queued',
        nextAttemptAt: null,
      });
      const sent = await eventually(
        'both messages sent',
        async () => (await messages(t.tenantId)).body.messages as Json[],
        45_000,
        {
          done: (ms) => ms.filter((m) => m.contactId === omni.body.contactId && m.status === 'sent').length === 2,
          intervalMs: 200,
        },
      );
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
      expect((await messages(t.tenantId, '?channel=email')).body.messages.map((m: Json) => m.channel)).toEqual([
        'email',
      ]);
      expect((await messages(t.tenantId, '?channel=whatsapp')).body.messages.map((m: Json) => m.channel)).toEqual([
        'whatsapp',
      ]);

      const messaged = await eventually('the contact messaged', () => contact(t.key, omni.body.contactId), 45_000, {
        done: (r) => r.body.contact?.status === 'messaged',
        intervalMs: 200,
      });
      expect(messaged.body.contact).toMatchObject({
        status: 'messaged',
        channels: ['whatsapp', 'email'],
        email: 'grace@example.com',
        consent: null,
        compliance: null,
        attempts: 0,
      });
      expect((await api(t.key, `/campaigns/${campaign.id}`)).body.campaign.stats).toEqual({
        contacts: 6,
        queued: 5,
        completed: 1,
        failed: 0,
      });
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
      expect(res.body).toEqual({
        status: 'accepted',
        contactId: expect.any(String),
        campaignId: campaign.id,
        channels: ['call'],
        contactStatus: 'scheduled',
        nextAttemptAt: expect.stringMatching(ISO),
      });
      const at = new Date(res.body.nextAttemptAt);
      // Midnight in Los Angeles at the start of the first allowed day (the day after tomorrow,
      // unless the test straddled a local midnight).
      expect(local(at, 'America/Los_Angeles').time).toBe('00:00:00');
      expect([dayAfter, ALL_DAYS[(ALL_DAYS.indexOf(dayAfter) + 1) % 7]]).toContain(
        local(at, 'America/Los_Angeles').weekday,
      );
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
      expect((await api(t.key, `/campaigns/${campaign.id}`)).body.campaign.stats).toEqual({
        contacts: 1,
        queued: 1,
        completed: 0,
        failed: 0,
      });
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
          const body =
            i % 3 === 0
              ? {
                  campaignId: campaign.id,
                  phone: phone(),
                  channel: 'whatsapp',
                  whatsappTemplateId: wa.id,
                  whatsappParams: [`Lead${i}`, 'Monday'],
                }
              : callLead(campaign.id, { name: `Lead ${i}` });
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
        for (const m of ms)
          expect(m.body).toBe(
            `Hi Lead${mine.find((s) => s.res.body.contactId === m.contactId)!.i}, your appointment is on Monday.`,
          );
      }
    });
  });
});
