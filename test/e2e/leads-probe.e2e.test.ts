import { call, startSystem, tenantWithKey, type System } from '../harness/system';

describe('probe', () => {
  let sys: System;
  let gw: string;
  beforeAll(async () => {
    sys = await startSystem();
    gw = sys.gateways[0]!.url;
  });
  afterAll(() => sys.stop());
  const log = (label: string, v: unknown) => process.stdout.write(`PROBE ${label}: ${JSON.stringify(v)}\n`);
  let n = 2000;
  const phone = () => `+1415555${n++}`;
  const consent = { outboundCall: true };

  it('probes', async () => {
    const t = await tenantWithKey(gw, { scopes: ['leads:read', 'leads:write', 'credits:read'], rateLimitPerSecond: 10_000 });
    await call(`${gw}/admin/v1/tenants/${t.tenantId}/credits`, { admin: true, body: { amount: 100000 } });
    const c = (await call(`${gw}/admin/v1/tenants/${t.tenantId}/campaigns`, { admin: true, body: { name: 'p', callingWindow: { start: '00:00', end: '24:00' } } })).body.campaign;
    await call(`${gw}/admin/v1/tenants/${t.tenantId}/campaigns/${c.id}/start`, { admin: true, method: 'POST' });
    const wa = (await call(`${gw}/admin/v1/tenants/${t.tenantId}/omni-templates`, { admin: true, body: { channel: 'whatsapp', name: 'w', body: 'Hi {{1}} {{2}}' } })).body.template;
    const em = (await call(`${gw}/admin/v1/tenants/${t.tenantId}/omni-templates`, { admin: true, body: { channel: 'email', name: 'e', subject: 'S {{ a }}', body: 'B {{b}}' } })).body.template;
    log('em', em);
    const lead = (b: unknown, h?: Record<string, string>) => call(`${gw}/api/v1/leads`, { key: t.key, body: b, ...(h && { headers: h }) });
    log('svc phone details', (await lead({ campaignId: c.id, phone: '+15551234567', consent })).body);
    log('gw phone details', (await lead({ campaignId: c.id, phone: 5, consent })).body);
    log('svc missing', (await lead({ campaignId: c.id, phone: phone(), channel: 'whatsapp', whatsappTemplateId: wa.id, whatsappParams: ['a'] })).body);
    log('dnc', (await call(`${gw}/admin/v1/tenants/${t.tenantId}/do-not-call`, { admin: true, body: { phone: '+14155559998' } })).body);
    log('dnc lead', (await lead({ campaignId: c.id, phone: '+14155559998', consent })).body);
    log('proto key', await lead({ campaignId: c.id, phone: phone(), channel: 'whatsapp', whatsappTemplateId: wa.id, whatsappParams: JSON.parse('{"1":"a","2":"b","__proto__":"x"}') }));
    log('proto tv', await lead({ campaignId: c.id, phone: phone(), email: 'a@b.co', channel: 'email', emailTemplateId: em.id, templateVariables: JSON.parse('{"a":"1","b":"2","__proto__":"x","$x":"y","c.d":"z"}') }));
    log('future whatsapp consent', (await lead({ campaignId: c.id, phone: phone(), channel: 'whatsapp', whatsappTemplateId: wa.id, whatsappParams: ['a', 'b'], consent: { outboundCall: false, capturedAt: '2099-01-01T00:00:00Z' } })).body);
    log('30s future call consent', (await lead({ campaignId: c.id, phone: phone(), consent: { outboundCall: true, capturedAt: new Date(Date.now() + 30_000).toISOString() } })).status);
    const trimmed = await lead({ campaignId: c.id, phone: ' +14155552999 ', name: '  Ada  ', consent });
    log('trim', (await call(`${gw}/api/v1/contacts/${trimmed.body.contactId}`, { key: t.key })).body.contact);
    const mixed = await lead({ campaignId: c.id, phone: phone(), channels: ['call', 'whatsapp'], consent, whatsappTemplateId: wa.id, whatsappParams: ['x', 'y'] });
    log('mixed', mixed.body);
    await new Promise((r) => setTimeout(r, 3000));
    log('mixed after', (await call(`${gw}/api/v1/contacts/${mixed.body.contactId}`, { key: t.key })).body.contact.status);
    log('messages', (await call(`${gw}/admin/v1/tenants/${t.tenantId}/messages`, { admin: true })).body.messages.map((m: any) => [m.channel, m.status, m.subject, m.body]));
    // concurrent distinct leads
    const many = await Promise.all(Array.from({ length: 100 }, (_, i) => lead(i % 2 ? { campaignId: c.id, phone: phone(), consent } : { campaignId: c.id, phone: phone(), channel: 'whatsapp', whatsappTemplateId: wa.id, whatsappParams: ['a', 'b'] })));
    log('many statuses', [...new Set(many.map((r) => r.status))]);
    log('many distinct', new Set(many.map((r) => r.body.contactId)).size);
    log('total', (await call(`${gw}/api/v1/campaigns/${c.id}`, { key: t.key })).body.campaign.stats);
    // burst
    const key = 'burst-probe';
    const body = { campaignId: c.id, phone: phone(), consent };
    const N = Number(process.env.PROBE_BURST ?? 1000);
    const t0 = Date.now();
    const answers = await Promise.all(Array.from({ length: N }, () => lead(body, { 'Idempotency-Key': key }).catch((e) => ({ status: -1, body: String(e.cause ?? e), headers: new Headers() }))));
    const kinds: Record<string, number> = {};
    for (const a of answers) {
      const k = `${a.status} ${a.body?.reasonCode ?? (a.status === -1 ? a.body : '')} ${a.headers.get('idempotent-replayed') ?? ''}`;
      kinds[k] = (kinds[k] ?? 0) + 1;
    }
    log(`burst ${N} in ${Date.now() - t0} ms`, kinds);
    log('after burst stats', (await call(`${gw}/api/v1/campaigns/${c.id}`, { key: t.key })).body.campaign.stats);
    // events idempotency & campaign pagination
    for (let i = 0; i < 3; i++) await call(`${gw}/admin/v1/tenants/${t.tenantId}/campaigns`, { admin: true, body: { name: `c${i}` } });
    const p1 = await call(`${gw}/api/v1/campaigns?limit=2`, { key: t.key });
    log('campaign page', [p1.body.pagination, p1.body.campaigns.map((x: any) => x.name)]);
    log('xapikey', (await call(`${gw}/api/v1/campaigns?limit=1`, { headers: { 'x-api-key': t.key } })).status);
  }, 300_000);
});
