// Over 300 lines because its cases share one started system (a few seconds to start per file); split by area only where that cost pays.
import { call } from '../harness/system';
import { eventually } from '../harness/wait';
import {
  ISO,
  HEX_ID,
  ALL_DAYS,
  FOREIGN_ID,
  gw,
  phone,
  takeLine,
  fresh,
  admin,
  sandboxKey,
  createCampaign,
  running,
  topUp,
  whatsappTemplate,
  messages,
  dncTenant,
} from './leads-setup';
import {
  dncPlatform,
  api,
  lead,
  contact,
  callLead,
  expectError,
  paths,
  local,
  type Json,
  useLeadsSystem,
} from './leads-setup';

// The leads suite (see leads-setup.ts): contacts (cancel, follow-ups, the scheduler, delete) and the operator API.
describe('leads through the gateway and the leads service', () => {
  useLeadsSystem();

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
      expectError(
        await api(t.key, `/contacts/${a.body.contactId}/cancel`, { body: { reason: 'x' } }),
        400,
        'validation_error',
        'a body',
      );
      // A scheduled contact loses its nextAttemptAt.
      const closed = await running(t.tenantId, {
        callingWindow: {
          start: '00:00',
          end: '24:00',
          days: ALL_DAYS.filter((d) => d !== local(new Date(), 'America/Los_Angeles').weekday),
        },
      });
      const s = await lead(t.key, callLead(closed.id));
      expect(s.body.contactStatus).toBe('scheduled');
      const cs = await api(t.key, `/contacts/${s.body.contactId}/cancel`, { method: 'POST' });
      expect(cs.body.contact).toMatchObject({ status: 'cancelled', nextAttemptAt: null });
      // Cancelled contacts count as contacts only.
      expect((await api(t.key, `/campaigns/${closed.id}`)).body.campaign.stats).toEqual({
        contacts: 1,
        queued: 0,
        completed: 0,
        failed: 0,
      });
    });

    it('schedules a follow-up (201), refusing one in the past, on a channel the contact lacks, or on a cancelled contact', async () => {
      const a = await lead(t.key, callLead(campaign.id));
      const id = a.body.contactId;
      const at = new Date(Date.now() + 2 * 3600_000).toISOString();
      const res = await api(t.key, `/contacts/${id}/followups`, {
        body: { scheduledAt: at, note: 'call back after the demo' },
      });
      expect(res.status).toBe(201);
      expect(res.body).toEqual({
        followup: {
          id: expect.stringMatching(HEX_ID),
          contactId: id,
          scheduledAt: at,
          channel: 'call',
          note: 'call back after the demo',
          status: 'scheduled',
          createdAt: expect.stringMatching(ISO),
        },
      });
      // Up to a year ahead, on a channel named explicitly.
      const late = new Date(Date.now() + 364 * 24 * 3600_000).toISOString();
      const explicit = await api(t.key, `/contacts/${id}/followups`, { body: { scheduledAt: late, channel: 'call' } });
      expect(explicit.status).toBe(201);
      expect(explicit.body.followup).toMatchObject({
        scheduledAt: late,
        channel: 'call',
        note: null,
        status: 'scheduled',
      });
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
      const wrongChannel = await api(t.key, `/contacts/${id}/followups`, {
        body: { scheduledAt: at, channel: 'email' },
      });
      expect(paths(wrongChannel).some((p) => /channel$/.test(p))).toBe(true);

      // A WhatsApp-only contact's follow-up defaults to WhatsApp.
      const w = await lead(t.key, {
        campaignId: campaign.id,
        phone: phone(),
        channel: 'whatsapp',
        whatsappTemplateId: wa.id,
        whatsappParams: ['a', 'b'],
      });
      const wf = await api(t.key, `/contacts/${w.body.contactId}/followups`, { body: { scheduledAt: at } });
      expect(wf.status).toBe(201);
      expect(wf.body.followup.channel).toBe('whatsapp');
      expectError(
        await api(t.key, `/contacts/${w.body.contactId}/followups`, { body: { scheduledAt: at, channel: 'call' } }),
        400,
        'validation_error',
        'call on a whatsapp contact',
      );

      expect((await api(t.key, `/contacts/${id}/cancel`, { method: 'POST' })).status).toBe(200);
      expectError(
        await api(t.key, `/contacts/${id}/followups`, { body: { scheduledAt: at } }),
        409,
        'conflict',
        'cancelled contact',
      );
    });

    it('sends a due WhatsApp follow-up again (the scheduler), and drops the follow-ups of contacts cancelled, deleted or sandbox', async () => {
      const whatsapp = (key: string, name: string) =>
        lead(key, {
          campaignId: campaign.id,
          phone: phone(),
          channel: 'whatsapp',
          whatsappTemplateId: wa.id,
          whatsappParams: [name, 'Friday'],
        });
      const sandbox = await sandboxKey(t.tenantId);
      const kept = await whatsapp(t.key, 'Kept');
      const cancelled = await whatsapp(t.key, 'Cancelled');
      const deleted = await whatsapp(t.key, 'Deleted');
      const sb = await whatsapp(sandbox, 'Sandbox');
      for (const r of [kept, cancelled, deleted, sb]) expect(r.status).toBe(202);
      const ids = [kept, cancelled, deleted].map((r) => r.body.contactId);
      await eventually(
        'the first messages sent',
        async () => (await messages(t.tenantId)).body.messages as Json[],
        45_000,
        {
          done: (ms) => ids.every((id) => ms.some((m) => m.contactId === id && m.status === 'sent')),
          intervalMs: 200,
        },
      );

      const due = new Date(Date.now() + 2_500).toISOString();
      for (const r of [kept, cancelled, deleted, sb]) {
        const f = await api(r === sb ? sandbox : t.key, `/contacts/${r.body.contactId}/followups`, {
          body: { scheduledAt: due },
        });
        expect(f.status).toBe(201);
        expect(f.body.followup).toMatchObject({ channel: 'whatsapp', status: 'scheduled', scheduledAt: due });
      }
      expect((await api(t.key, `/contacts/${cancelled.body.contactId}/cancel`, { method: 'POST' })).status).toBe(200);
      expect((await api(t.key, `/contacts/${deleted.body.contactId}`, { method: 'DELETE' })).status).toBe(204);

      const count = (ms: Json[], id: string) => ms.filter((m) => m.contactId === id).length;
      const after = await eventually(
        'the follow-up sent',
        async () => (await messages(t.tenantId)).body.messages as Json[],
        45_000,
        {
          done: (ms) => ms.filter((m) => m.contactId === kept.body.contactId && m.status === 'sent').length === 2,
          intervalMs: 200,
        },
      );
      const twice = after.filter((m) => m.contactId === kept.body.contactId);
      expect(twice.map((m) => m.body)).toEqual([
        'Hi Kept, your appointment is on Friday.',
        'Hi Kept, your appointment is on Friday.',
      ]);
      expect(new Set(twice.map((m) => m.id)).size).toBe(2);
      // Give the scheduler a few more rounds: the others stay as they were.
      await new Promise((r) => setTimeout(r, 2_000));
      const final = (await messages(t.tenantId)).body.messages as Json[];
      expect({
        cancelled: count(final, cancelled.body.contactId),
        deleted: count(final, deleted.body.contactId),
        sandbox: count(final, sb.body.contactId),
      }).toEqual({ cancelled: 1, deleted: 0, sandbox: 0 });
      expect((await contact(t.key, kept.body.contactId)).body.contact.status).toBe('messaged');
      expect((await contact(t.key, cancelled.body.contactId)).body.contact.status).toBe('cancelled');
    });

    it('dials a scheduled contact when its window opens, checking again first: one cancelled stays cancelled, one put on the do-not-call list meanwhile fails', async () => {
      // A one-minute window opening at the next minute in Los Angeles (whole-hour offset: its
      // seconds are UTC's). Too close to a minute's end, wait for the next one.
      if (new Date().getUTCSeconds() >= 54)
        await new Promise((r) => setTimeout(r, (61 - new Date().getUTCSeconds()) * 1_000));
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
      const queued = await eventually(
        'the scheduled dial requested',
        () => contact(t.key, dialled.body.contactId),
        90_000,
        { done: (r) => r.body.contact.status !== 'scheduled', intervalMs: 200 },
      );
      expect(Date.now()).toBeGreaterThanOrEqual(due);
      expect(queued.body.contact).toMatchObject({
        status: 'queued',
        nextAttemptAt: null,
        attempts: 0,
        endReason: null,
      });
      const failed = await eventually(
        'the listed contact stopped',
        () => contact(t.key, listed.body.contactId),
        15_000,
        { done: (r) => r.body.contact.status !== 'scheduled', intervalMs: 200 },
      );
      expect(failed.body.contact).toMatchObject({
        status: 'failed',
        endReason: 'do_not_call',
        nextAttemptAt: null,
        attempts: 0,
      });
      // Its compliance evidence is the ingest decision, kept as it was.
      expect(failed.body.contact.compliance.doNotCall).toEqual({ tenant: false, platform: false });
      await new Promise((r) => setTimeout(r, 1_500));
      expect((await contact(t.key, cancelled.body.contactId)).body.contact).toMatchObject({
        status: 'cancelled',
        nextAttemptAt: null,
        attempts: 0,
      });
      expect((await api(t.key, `/campaigns/${c.id}`)).body.campaign.stats).toEqual({
        contacts: 3,
        queued: 1,
        completed: 0,
        failed: 1,
      });
    }, 150_000);

    it('deletes a contact (204): then 404 to GET, DELETE and cancel; its messages are erased too', async () => {
      const w = await lead(t.key, {
        campaignId: campaign.id,
        phone: phone(),
        name: 'Erase Me',
        channel: 'whatsapp',
        whatsappTemplateId: wa.id,
        whatsappParams: ['Erase', 'Me'],
      });
      expect(w.status).toBe(202);
      const id = w.body.contactId;
      await eventually('its message', async () => (await messages(t.tenantId)).body.messages as Json[], 45_000, {
        done: (ms) => ms.some((m) => m.contactId === id),
        intervalMs: 200,
      });
      const before = (await api(t.key, `/campaigns/${campaign.id}/contacts?limit=100`)).body.pagination.total;

      const del = await api(t.key, `/contacts/${id}`, { method: 'DELETE' });
      expect(del.status).toBe(204);
      expect(del.body).toBeUndefined();
      expectError(await contact(t.key, id), 404, 'not_found', 'GET after delete');
      expectError(await api(t.key, `/contacts/${id}`, { method: 'DELETE' }), 404, 'not_found', 'DELETE again');
      expectError(
        await api(t.key, `/contacts/${id}/cancel`, { method: 'POST' }),
        404,
        'not_found',
        'cancel after delete',
      );
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

  describe('the operator API', () => {
    it('adds to the platform’s and a tenant’s do-not-call list: 201 created, then 201 created false with the first entry', async () => {
      const t = await fresh();
      const raw = `+1 (415) 555-${String(takeLine()).padStart(4, '0')}`;
      const e164 = raw.replace(/[^+0-9]/g, '');
      const first = await dncPlatform(raw);
      expect(first.status).toBe(201);
      expect(first.body).toEqual({
        entry: { phone: e164, list: 'platform', source: 'operator', createdAt: expect.stringMatching(ISO) },
        created: true,
      });
      const second = await dncPlatform(e164);
      expect(second.status).toBe(201);
      expect(second.body).toEqual({ entry: first.body.entry, created: false });

      const tenantFirst = await dncTenant(t.tenantId, e164);
      expect(tenantFirst.status).toBe(201);
      expect(tenantFirst.body).toEqual({
        entry: { phone: e164, list: 'tenant', source: 'operator', createdAt: expect.stringMatching(ISO) },
        created: true,
      });
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
        [
          'an unknown day',
          { callingWindow: { start: '08:00', end: '21:00', days: ['mon', 'funday'] } },
          /callingWindow\.days/,
        ],
        [
          'a repeated day',
          { callingWindow: { start: '08:00', end: '21:00', days: ['mon', 'mon'] } },
          /callingWindow\.days/,
        ],
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
      const edge = await createCampaign(t2.tenantId, {
        name: 'Edges',
        callingWindow: { start: '00:00', end: '00:01', days: ['sun'] },
        maxCallSeconds: 10,
        maxAttempts: 10,
        retryAfterMinutes: 10_080,
      });
      expect(edge.status).toBe(201);
      expect(edge.body.campaign).toMatchObject({
        callingWindow: { always: false, start: '00:00', end: '00:01', days: ['sun'] },
        maxCallSeconds: 10,
        maxAttempts: 10,
        retryAfterMinutes: 10_080,
      });
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
      expectError(
        await admin(`/tenants/${FOREIGN_ID}/omni-templates`, { channel: 'email', name: 'x', body: 'Hi' }),
        404,
        'not_found',
        'unknown tenant',
      );
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
        const res = await call(`${gw}/admin/v1${path}`, {
          headers: wrong,
          ...(body ? { body } : path.endsWith('start') ? { method: 'POST' } : {}),
        });
        expectError(res, 401, 'unauthorized', what);
      }
      const byKey = await call(`${gw}/admin/v1/tenants/${t.tenantId}/omni-templates`, {
        key: t.key,
        body: { channel: 'email', name: 'x', body: 'Hi' },
      });
      expectError(byKey, 401, 'unauthorized', 'a tenant key');
      expectError(
        await call(`${gw}/admin/v1/tenants/${t.tenantId}/do-not-call`, { body: { phone: phone() } }),
        401,
        'unauthorized',
        'no token',
      );
      // Nothing happened.
      expect((await api(t.key, `/campaigns/${id}`)).body.campaign.status).toBe('draft');
      expect((await api(t.key, '/campaigns')).body.pagination.total).toBe(1);
      expect((await api(t.key, '/omni/templates')).body.templates).toEqual([]);
    });
  });
});
