// Over 300 lines because its cases share one started system (a few seconds to start per file); split by area only where that cost pays.
import { randomBytes } from 'node:crypto';
import { ADMIN_TOKEN, call } from '../harness/system';
import { eventually } from '../harness/wait';
import {
  BURST,
  ISO,
  HEX_ID,
  FOREIGN_ID,
  gw,
  phone,
  fresh,
  sandboxKey,
  createCampaign,
  running,
  topUp,
  whatsappTemplate,
  messages,
  dncTenant,
  dncPlatform,
  api,
  lead,
  event,
} from './leads-setup';
import { contact, consent, callLead, expectError, type Json, useLeadsSystem } from './leads-setup';

// The leads suite (see leads-setup.ts): scopes, sandbox keys, Idempotency-Key on POST /leads, event routes and POST /events.
describe('leads through the gateway and the leads service', () => {
  useLeadsSystem();

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
        expect({ method, path, status: r.status, missing: r.body.missing }).toEqual({
          method,
          path,
          status: 403,
          missing: ['leads:write'],
        });
      }
      for (const path of [
        '/campaigns',
        `/campaigns/${id}`,
        `/campaigns/${id}/contacts`,
        `/contacts/${id}`,
        '/omni/templates',
        '/event-routes',
      ]) {
        const r = await api(writeOnly.key, path);
        expect({ path, status: r.status, missing: r.body.missing }).toEqual({
          path,
          status: 403,
          missing: ['leads:read'],
        });
      }
      // Nothing was stored by the refused lead; a read key sees that.
      expect((await api(readOnly.key, `/campaigns/${campaign.id}/contacts`)).body.pagination.total).toBe(0);
      // No key: 401; the operator token is no tenant key.
      expectError(await call(`${gw}/api/v1/leads`, { body: callLead(campaign.id) }), 401, 'unauthorized');
      expectError(
        await call(`${gw}/api/v1/campaigns`, { headers: { authorization: `Bearer ${ADMIN_TOKEN}` } }),
        401,
        'unauthorized',
      );
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
      expect(res.body).toEqual({
        status: 'sandbox_accepted',
        contactId: expect.stringMatching(HEX_ID),
        campaignId: campaign.id,
        channels: ['call'],
        contactStatus: 'sandbox_accepted',
        nextAttemptAt: null,
      });
      // Sandbox and live keys see one tenant: the live key reads the sandbox contact.
      for (const key of [sandbox, t.key]) {
        const c = (await contact(key, res.body.contactId)).body.contact;
        expect(c).toMatchObject({
          status: 'sandbox_accepted',
          sandbox: true,
          attempts: 0,
          nextAttemptAt: null,
          compliance: { doNotCall: { tenant: false, platform: false }, callingWindow: { open: true } },
        });
      }
      expect((await api(t.key, '/credits')).body).toEqual({ balance: 0, available: 0, held: 0, updatedAt: null });
      expect((await api(t.key, '/credits/transactions')).body.pagination.total).toBe(0);
      // The same lead with a live key on the empty wallet is refused.
      expectError(await lead(t.key, callLead(campaign.id)), 402, 'insufficient_credits');

      // A sandbox WhatsApp lead: accepted, and no message is recorded.
      const msg = await lead(sandbox, {
        campaignId: campaign.id,
        phone: phone(),
        channel: 'whatsapp',
        whatsappTemplateId: wa.id,
        whatsappParams: ['Ada', 'Monday'],
      });
      expect(msg.status).toBe(202);
      expect(msg.body).toMatchObject({
        status: 'sandbox_accepted',
        contactStatus: 'sandbox_accepted',
        channels: ['whatsapp'],
      });
      // A live WhatsApp lead of the same tenant afterwards: once its message is sent, the sandbox
      // one has had every chance to appear, and has not.
      const live = await lead(t.key, {
        campaignId: campaign.id,
        phone: phone(),
        channel: 'whatsapp',
        whatsappTemplateId: wa.id,
        whatsappParams: ['Bob', 'Friday'],
      });
      expect(live.status).toBe(202);
      const all = await eventually(
        'the live message sent',
        async () => (await messages(t.tenantId)).body.messages as Json[],
        45_000,
        {
          done: (ms) => ms.some((m) => m.contactId === live.body.contactId && m.status === 'sent'),
          intervalMs: 200,
        },
      );
      expect(all.map((m) => m.contactId)).toEqual([live.body.contactId]);
      expect((await contact(t.key, msg.body.contactId)).body.contact.status).toBe('sandbox_accepted');
      // Sandbox rules are the live rules: a missing placeholder is still 400.
      expectError(
        await lead(sandbox, {
          campaignId: campaign.id,
          phone: phone(),
          channel: 'whatsapp',
          whatsappTemplateId: wa.id,
          whatsappParams: ['Ada'],
        }),
        400,
        'validation_error',
        'sandbox missing value',
      );
      // The message is recorded as sent a moment before its contact counts as completed.
      const stats = await eventually(
        'the live contact completed',
        async () => (await api(t.key, `/campaigns/${campaign.id}`)).body.campaign.stats as Json,
        45_000,
        { done: (st) => st.completed === 1, intervalMs: 200 },
      );
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
      expect(res.body.details).toEqual([
        { path: expect.stringMatching(/phone$/), message: expect.stringMatching(/tenant/) },
      ]);
      expectError(
        await lead(sandbox, callLead(campaign.id, { phone: platformListed })),
        422,
        'do_not_call',
        'platform',
      );
      expectError(
        await lead(sandbox, callLead(campaign.id, { consent: { outboundCall: false } })),
        422,
        'consent_required',
      );
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
      expectError(
        await lead(t.key, body, { 'Idempotency-Key': 'k'.repeat(256) }),
        400,
        'validation_error',
        'a key over 255 characters',
      );
    });

    it(
      `makes ${BURST} concurrent POST /leads with one key and body exactly one contact: every answer 202 (replayed) or 409 idempotency_in_progress`,
      async () => {
        const campaign = await running(t.tenantId);
        const body = callLead(campaign.id);
        const key = `burst-${randomBytes(4).toString('hex')}`;
        const answers = await Promise.all(
          Array.from({ length: BURST }, () => lead(t.key, body, { 'Idempotency-Key': key })),
        );

        const summary = new Map<string, number>();
        for (const a of answers) {
          const kind =
            a.status === 202
              ? a.headers.get('idempotent-replayed') === 'true'
                ? '202 replayed'
                : '202 first'
              : `${a.status} ${a.body?.reasonCode}`;
          summary.set(kind, (summary.get(kind) ?? 0) + 1);
        }
        const kinds = Object.fromEntries(summary);
        expect(
          Object.keys(kinds).filter((k) => !['202 first', '202 replayed', '409 idempotency_in_progress'].includes(k)),
        ).toEqual([]);
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

  describe('event routes and POST /events', () => {
    it('routes an event type (201), replaces its campaign keeping one route, lists it, delivers events to it, and removes it (204, then 404)', async () => {
      const t = await fresh();
      await topUp(t.tenantId, 1_000);
      const first = await running(t.tenantId);
      const second = await running(t.tenantId);

      const created = await api(t.key, '/event-routes', { body: { eventType: 'deal.won', campaignId: first.id } });
      expect(created.status).toBe(201);
      expect(created.body).toEqual({
        route: { eventType: 'deal.won', campaignId: first.id, createdAt: expect.stringMatching(ISO) },
      });
      const replaced = await api(t.key, '/event-routes', { body: { eventType: 'deal.won', campaignId: second.id } });
      expect(replaced.status).toBe(201);
      expect(replaced.body).toEqual({
        route: { eventType: 'deal.won', campaignId: second.id, createdAt: created.body.route.createdAt },
      });
      const another = await api(t.key, '/event-routes', {
        body: { eventType: 'form:submitted', campaignId: first.id },
      });
      expect(another.status).toBe(201);
      const listed = await api(t.key, '/event-routes');
      expect(listed.status).toBe(200);
      expect(listed.body).toEqual({ routes: [replaced.body.route, another.body.route] }); // oldest first

      // An event of a mapped type is a lead of the routed campaign.
      const number = phone();
      const ev = await event(t.key, { eventType: 'deal.won', phone: number, name: 'Ada', channel: 'call', consent });
      expect(ev.status).toBe(202);
      expect(ev.body).toEqual({
        status: 'accepted',
        contactId: expect.stringMatching(HEX_ID),
        campaignId: second.id,
        channels: ['call'],
        contactStatus: 'queued',
        nextAttemptAt: null,
      });
      expect((await api(t.key, `/campaigns/${second.id}/contacts`)).body.contacts.map((c: Json) => c.id)).toEqual([
        ev.body.contactId,
      ]);
      expect((await api(t.key, `/campaigns/${first.id}/contacts`)).body.pagination.total).toBe(0);
      expect((await contact(t.key, ev.body.contactId)).body.contact).toMatchObject({
        campaignId: second.id,
        phone: number,
        name: 'Ada',
        status: 'queued',
      });
      const viaOther = await event(t.key, { eventType: 'form:submitted', phone: phone(), consent });
      expect(viaOther.status).toBe(202);
      expect(viaOther.body.campaignId).toBe(first.id);
      // Events follow the lead rules.
      expectError(
        await event(t.key, {
          eventType: 'deal.won',
          phone: phone(),
          channel: 'call',
          consent: { outboundCall: false },
        }),
        422,
        'consent_required',
      );

      const removed = await api(t.key, '/event-routes?eventType=deal.won', { method: 'DELETE' });
      expect(removed.status).toBe(204);
      expectError(
        await api(t.key, '/event-routes?eventType=deal.won', { method: 'DELETE' }),
        404,
        'not_found',
        'removed twice',
      );
      expectError(
        await event(t.key, { eventType: 'deal.won', phone: phone(), consent }),
        422,
        'event_route_not_found',
        'after removal',
      );
      expect((await api(t.key, '/event-routes')).body).toEqual({ routes: [another.body.route] });

      // Routes are the tenant's: another tenant has none, and its events of the same type are unmapped.
      const other = await fresh();
      expect((await api(other.key, '/event-routes')).body).toEqual({ routes: [] });
      expectError(
        await event(other.key, { eventType: 'form:submitted', phone: phone(), consent }),
        422,
        'event_route_not_found',
        'other tenant',
      );
      expectError(
        await api(other.key, '/event-routes?eventType=form:submitted', { method: 'DELETE' }),
        404,
        'not_found',
        'other tenant delete',
      );
    });

    it('answers an event routed to a draft campaign 409 campaign_not_running', async () => {
      const t = await fresh();
      const draft = await createCampaign(t.tenantId, { name: 'Not started' });
      const route = await api(t.key, '/event-routes', {
        body: { eventType: 'lead.created', campaignId: draft.body.campaign.id },
      });
      expect(route.status).toBe(201);
      expectError(
        await event(t.key, { eventType: 'lead.created', phone: phone(), consent }),
        409,
        'campaign_not_running',
      );
    });
  });
});
