// Over 300 lines because its cases share one started system (a few seconds to start per file); split by area only where that cost pays.
import { call, type CallResult } from '../harness/system';
import {
  OPEN_ALL_DAY,
  FOREIGN_ID,
  gw,
  phone,
  fresh,
  admin,
  createCampaign,
  startCampaign,
  running,
  topUp,
  whatsappTemplate,
  emailTemplate,
  dncTenant,
} from './leads-setup';
import {
  dncPlatform,
  api,
  lead,
  event,
  contact,
  consent,
  callLead,
  expectError,
  paths,
  type Json,
  useLeadsSystem,
} from './leads-setup';

// The leads suite (see leads-setup.ts): refusals, each with its status, reasonCode and error body.
describe('leads through the gateway and the leads service', () => {
  useLeadsSystem();

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
    const total = async (campaignId = campaign.id) =>
      (await api(t.key, `/campaigns/${campaignId}/contacts`)).body.pagination.total as number;

    it('answers a lead for a draft campaign 409 campaign_not_running, and for another tenant’s or an unknown campaign 422 campaign_not_found', async () => {
      const draft = await createCampaign(t.tenantId, { name: 'Not yet', callingWindow: OPEN_ALL_DAY });
      expect(draft.status).toBe(201);
      const res = await lead(t.key, callLead(draft.body.campaign.id));
      expectError(res, 409, 'campaign_not_running');
      // The campaign rule comes first: a bad phone on a draft campaign is still 409.
      expectError(
        await lead(t.key, callLead(draft.body.campaign.id, { phone: '+15551234567' })),
        409,
        'campaign_not_running',
        'draft and bad phone',
      );

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
      const res = await lead(t.key, {
        campaignId: callOnly.id,
        phone: phone(),
        channel: 'whatsapp',
        whatsappTemplateId: wa.id,
        whatsappParams: ['a', 'b'],
      });
      expectError(res, 400, 'validation_error', 'a channel the campaign lacks');
      expect(res.body.error).toMatch(/whatsapp/);
      // The email channel needs an email address.
      const noEmail = await lead(t.key, {
        campaignId: campaign.id,
        phone: phone(),
        channel: 'email',
        emailTemplateId: em.id,
        templateVariables: { first_name: 'A', code: 'B' },
      });
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
      const wOnly = await lead(t.key, {
        campaignId: campaign.id,
        phone: phone(),
        channel: 'whatsapp',
        whatsappTemplateId: wa.id,
        whatsappParams: ['a', 'b'],
      });
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
      const future = await lead(
        t.key,
        callLead(campaign.id, {
          consent: { outboundCall: true, capturedAt: new Date(Date.now() + 3600_000).toISOString() },
        }),
      );
      expectError(future, 400, 'validation_error', 'an hour ahead');
      expect(paths(future).some((p) => /capturedAt$/.test(p))).toBe(true);
      // An offset is fine, and stored as the instant it names.
      const offset = await lead(
        t.key,
        callLead(campaign.id, {
          consent: { outboundCall: true, capturedAt: '2026-01-20T16:03:00+02:00', source: 'crm' },
        }),
      );
      expect(offset.status).toBe(202);
      expect((await contact(t.key, offset.body.contactId)).body.contact.consent).toEqual({
        outboundCall: true,
        capturedAt: '2026-01-20T14:03:00.000Z',
        source: 'crm',
      });
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
      expect(tenantRes.body.details).toEqual([
        { path: expect.stringMatching(/phone$/), message: expect.stringMatching(/tenant/) },
      ]);
      expect(tenantRes.body.details[0].message).not.toMatch(/platform/);

      const platformRes = await lead(t.key, callLead(campaign.id, { phone: onPlatform }));
      expectError(platformRes, 422, 'do_not_call', 'platform list');
      expect(platformRes.body.details).toEqual([
        { path: expect.stringMatching(/phone$/), message: expect.stringMatching(/platform/) },
      ]);
      expect(platformRes.body.details[0].message).not.toMatch(/tenant/);

      const bothRes = await lead(t.key, callLead(campaign.id, { phone: onBoth }));
      expectError(bothRes, 422, 'do_not_call', 'both lists');
      expect(bothRes.body.details.map((d: Json) => d.message)).toEqual([
        expect.stringMatching(/tenant/),
        expect.stringMatching(/platform/),
      ]);

      // The tenant list is the tenant's; the platform list holds for every tenant.
      const otherCampaign = await running(other.tenantId);
      await topUp(other.tenantId, 100);
      expect((await lead(other.key, callLead(otherCampaign.id, { phone: onTenant }))).status).toBe(202);
      expectError(
        await lead(other.key, callLead(otherCampaign.id, { phone: onPlatform })),
        422,
        'do_not_call',
        'platform list, other tenant',
      );
      // The same number written otherwise is the same number.
      const formatted = onTenant.replace(/^\+1(\d{3})(\d{3})(\d{4})$/, '+1 ($1) $2-$3');
      expectError(await lead(t.key, callLead(campaign.id, { phone: formatted })), 422, 'do_not_call', 'formatted');
      // Consent is checked before the lists.
      expectError(
        await lead(t.key, callLead(campaign.id, { phone: onTenant, consent: { outboundCall: false } })),
        422,
        'consent_required',
        'consent first',
      );
      // The lists guard the call channel: a WhatsApp message to the number is no call.
      expect(
        (
          await lead(t.key, {
            campaignId: campaign.id,
            phone: onTenant,
            channel: 'whatsapp',
            whatsappTemplateId: wa.id,
            whatsappParams: ['a', 'b'],
          })
        ).status,
      ).toBe(202);
      expect(await total()).toBe(before + 1);
    });

    it('refuses a message lead whose template misses a placeholder value with 400 naming it', async () => {
      const waMissing = await lead(t.key, {
        campaignId: campaign.id,
        phone: phone(),
        channel: 'whatsapp',
        whatsappTemplateId: wa.id,
        whatsappParams: ['Ada'],
      });
      expectError(waMissing, 400, 'validation_error', 'whatsapp {{2}}');
      expect(waMissing.body.details).toEqual([
        { path: expect.stringMatching(/whatsappParams\.2$/), message: expect.stringMatching(/\{\{2\}\}/) },
      ]);
      expect(waMissing.body.error).toMatch(/2/);

      const emMissing = await lead(t.key, {
        campaignId: campaign.id,
        phone: phone(),
        email: 'a@example.com',
        channel: 'email',
        emailTemplateId: em.id,
        templateVariables: { first_name: 'Ada' },
      });
      expectError(emMissing, 400, 'validation_error', 'email {{code}}');
      expect(emMissing.body.details).toEqual([
        { path: expect.stringMatching(/templateVariables\.code$/), message: expect.stringMatching(/\{\{code\}\}/) },
      ]);
      expect(emMissing.body.error).toMatch(/code/);

      // The object form of whatsappParams names the same placeholders.
      const objectForm = await lead(t.key, {
        campaignId: campaign.id,
        phone: phone(),
        channel: 'whatsapp',
        whatsappTemplateId: wa.id,
        whatsappParams: { '1': 'Ada', '3': 'x' },
      });
      expectError(objectForm, 400, 'validation_error', 'object form');
      expect(paths(objectForm)).toEqual([expect.stringMatching(/whatsappParams\.2$/)]);
      const objectOk = await lead(t.key, {
        campaignId: campaign.id,
        phone: phone(),
        channel: 'whatsapp',
        whatsappTemplateId: wa.id,
        whatsappParams: { '1': 'Ada', '2': 'Monday' },
      });
      expect(objectOk.status).toBe(202);

      // No template named for a message channel, and both channels at once: every problem listed.
      const none = await lead(t.key, {
        campaignId: campaign.id,
        phone: phone(),
        email: 'a@example.com',
        channels: ['whatsapp', 'email'],
      });
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
        [
          'null in whatsappParams',
          { channel: 'whatsapp', whatsappTemplateId: wa.id, whatsappParams: { '1': 'Ada', '2': null } },
        ],
        [
          'an object in whatsappParams',
          { channel: 'whatsapp', whatsappTemplateId: wa.id, whatsappParams: { '1': 'Ada', '2': { day: 'Mon' } } },
        ],
        [
          'a number in templateVariables',
          {
            channel: 'email',
            email: 'a@example.com',
            emailTemplateId: em.id,
            templateVariables: { first_name: 'Ada', code: 42 },
          },
        ],
        [
          'a boolean in templateVariables',
          {
            channel: 'email',
            email: 'a@example.com',
            emailTemplateId: em.id,
            templateVariables: { first_name: true, code: 'x' },
          },
        ],
        [
          'a list as templateVariables',
          { channel: 'email', email: 'a@example.com', emailTemplateId: em.id, templateVariables: ['Ada', 'x'] },
        ],
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
        [
          'an email template as WhatsApp',
          { channel: 'whatsapp', whatsappTemplateId: em.id, whatsappParams: ['a', 'b'] },
        ],
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
      expectError(
        await lead(poor.key, callLead(c.id, { phone: listed })),
        422,
        'do_not_call',
        'do-not-call before credit',
      );
      expectError(
        await lead(poor.key, callLead(c.id, { consent: { outboundCall: false } })),
        422,
        'consent_required',
        'consent before credit',
      );
      // A message lead needs no credit.
      const waT = await whatsappTemplate(poor.tenantId);
      const msg = await lead(poor.key, {
        campaignId: c.id,
        phone: phone(),
        channel: 'whatsapp',
        whatsappTemplateId: waT.id,
        whatsappParams: ['a', 'b'],
      });
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
        [
          'a source over 200 characters',
          callLead(campaign.id, { consent: { ...consent, source: 'x'.repeat(201) } }),
          /source$/,
        ],
      ];
      for (const [what, body, path] of cases) {
        const res = await lead(t.key, body);
        expectError(res, 400, 'validation_error', what);
        expect({ what, matched: paths(res).some((p) => path.test(p)) }).toEqual({ what, matched: true });
      }
      expectError(await api(t.key, '/leads', { raw: '{"campaignId": ' }), 400, 'validation_error', 'malformed JSON');
      expectError(await api(t.key, '/leads', { raw: '[]' }), 400, 'validation_error', 'a JSON array');
      expectError(await api(t.key, '/leads', { method: 'POST' }), 400, 'validation_error', 'no body');
      const form = await api(t.key, '/leads', {
        raw: 'phone=x',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      expectError(form, 415, 'unsupported_media_type', 'a form');
      expect(await total()).toBe(before);
    });

    it('refuses an eventType of 500 characters or with forbidden characters (400), an unmapped one 422 event_route_not_found', async () => {
      const long = 'e'.repeat(500);
      for (const [what, res] of [
        ['POST /events, 500 characters', await event(t.key, { eventType: long, phone: phone(), consent })],
        ['POST /events, a space', await event(t.key, { eventType: 'deal won', phone: phone(), consent })],
        ['POST /events, empty', await event(t.key, { eventType: '', phone: phone(), consent })],
        [
          'POST /event-routes, 500 characters',
          await api(t.key, '/event-routes', { body: { eventType: long, campaignId: campaign.id } }),
        ],
        [
          'DELETE /event-routes, 500 characters',
          await api(t.key, `/event-routes?eventType=${long}`, { method: 'DELETE' }),
        ],
        ['DELETE /event-routes without eventType', await api(t.key, '/event-routes', { method: 'DELETE' })],
      ] as const) {
        expectError(res, 400, 'validation_error', what);
        expect({ what, named: paths(res).some((p) => /eventType$/.test(p)) }).toEqual({ what, named: true });
      }
      expectError(
        await event(t.key, { eventType: 'never.mapped', phone: phone(), consent, channel: 'call' }),
        422,
        'event_route_not_found',
      );
      expectError(
        await event(t.key, { eventType: 'deal.won', campaignId: campaign.id, phone: phone(), consent }),
        400,
        'validation_error',
        'campaignId in an event',
      );
    });

    it('refuses an event route to another tenant’s or an unknown campaign with 422 campaign_not_found', async () => {
      const foreign = await running(other.tenantId);
      expectError(
        await api(t.key, '/event-routes', { body: { eventType: 'deal.won', campaignId: foreign.id } }),
        422,
        'campaign_not_found',
        'foreign',
      );
      expectError(
        await api(t.key, '/event-routes', { body: { eventType: 'deal.won', campaignId: FOREIGN_ID } }),
        422,
        'campaign_not_found',
        'unknown',
      );
      expectError(
        await api(t.key, '/event-routes', { body: { eventType: 'deal.won', campaignId: campaign.id, extra: 1 } }),
        400,
        'validation_error',
        'unknown field',
      );
      expect((await api(t.key, '/event-routes')).body).toEqual({ routes: [] });
    });

    it('refuses ids that are not ids in paths with 400, before any service is asked', async () => {
      for (const [what, method, path, body] of [
        ['GET /campaigns/{id}', 'GET', '/campaigns/not-an-id', undefined],
        ['GET /campaigns/{id}/contacts', 'GET', '/campaigns/123/contacts', undefined],
        ['GET /contacts/{id}', 'GET', '/contacts/zzzzzzzzzzzzzzzzzzzzzzzz', undefined],
        ['DELETE /contacts/{id}', 'DELETE', '/contacts/not-an-id', undefined],
        ['POST /contacts/{id}/cancel', 'POST', '/contacts/not-an-id/cancel', undefined],
        [
          'POST /contacts/{id}/followups',
          'POST',
          '/contacts/not-an-id/followups',
          { scheduledAt: new Date(Date.now() + 3600_000).toISOString() },
        ],
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
        [
          'templates, tenant id',
          '/tenants/not-a-tenant/omni-templates',
          { channel: 'email', name: 'x', body: 'x' },
          /tenantId$/,
        ],
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
      expectError(
        await startCampaign(other.tenantId, draft.body.campaign.id),
        404,
        'not_found',
        'start under another tenant',
      );
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
        [
          'capturedAt in the future',
          lead(
            t.key,
            callLead(campaign.id, {
              consent: { outboundCall: true, capturedAt: new Date(Date.now() + 3600_000).toISOString() },
            }),
          ),
          ['body.consent.capturedAt'],
        ],
        [
          'a missing placeholder value',
          lead(t.key, {
            campaignId: campaign.id,
            phone: phone(),
            channel: 'whatsapp',
            whatsappTemplateId: wa.id,
            whatsappParams: ['Ada'],
          }),
          ['body.whatsappParams.2'],
        ],
        [
          'a foreign template id',
          lead(t.key, {
            campaignId: campaign.id,
            phone: phone(),
            channel: 'whatsapp',
            whatsappTemplateId: FOREIGN_ID,
            whatsappParams: ['a', 'b'],
          }),
          ['body.whatsappTemplateId'],
        ],
        [
          'a campaign window ending before it starts',
          createCampaign(t.tenantId, { name: 'x', callingWindow: { start: '21:00', end: '08:00' } }),
          ['body.callingWindow.end'],
        ],
        [
          'a follow-up in the past',
          api(t.key, `/contacts/${someone}/followups`, {
            body: { scheduledAt: new Date(Date.now() - 60_000).toISOString() },
          }),
          ['body.scheduledAt'],
        ],
      ];
      const seen: { what: string; status: number; paths: string[] }[] = [];
      for (const [what, pending, expected] of cases) {
        const res = await pending;
        seen.push({ what, status: res.status, paths: res.status === 400 ? paths(res) : expected });
      }
      expect(seen).toEqual(cases.map(([what, , expected]) => ({ what, status: 400, paths: expected })));
    });

    it('refuses bad list queries (400) and an unknown template channel', async () => {
      for (const qs of [
        '/campaigns?page=0',
        '/campaigns?limit=101',
        '/campaigns?limit=ten',
        `/campaigns/${campaign.id}/contacts?limit=0`,
        '/omni/templates?channel=sms',
        '/omni/templates?channel=call',
      ]) {
        expectError(await api(t.key, qs), 400, 'validation_error', qs);
      }
      expectError(
        await admin(`/tenants/${t.tenantId}/messages?channel=call`),
        400,
        'validation_error',
        'messages ?channel=call',
      );
    });
  });
});
