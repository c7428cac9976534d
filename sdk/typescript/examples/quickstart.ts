import { VoiceApi, VoiceApiError, ok, paginate } from '@voiceapi/sdk';

// The CRM pattern in five minutes: push your leads in batches with your own ids, sync again
// safely, read back who became what, and handle a refusal by its reason code.
export async function quickstart(opts: { baseUrl: string; apiKey: string; campaignId: string }) {
  const vapi = new VoiceApi({ apiKey: opts.apiKey, baseUrl: opts.baseUrl });

  // 1. Who am I? (any valid key)
  const me = await ok(vapi.api.GET('/api/v1/ping'));

  // 2. Push leads: up to 1,000 per request (the helper splits longer lists), each with your CRM's id.
  const leads = [
    {
      externalId: 'crm-1001',
      phone: '+14155550123',
      name: 'Ada Lovelace',
      channel: 'call' as const,
      consent: { outboundCall: true, source: 'web form' },
    },
    {
      externalId: 'crm-1002',
      phone: '+14155550124',
      name: 'Alan Turing',
      channel: 'call' as const,
      consent: { outboundCall: true, source: 'web form' },
    },
    { externalId: 'crm-1003', phone: '+14155550125', name: 'Grace Hopper', channel: 'call' as const }, // no consent: refused
  ];
  const first = await vapi.batchLeads({ campaignId: opts.campaignId, leads });
  const refusals = first.results.filter((r) => r.status === 'refused').map((r) => `${r.externalId}: ${r.reasonCode}`);

  // 3. The nightly sync sends them again: nothing is ingested twice.
  const again = await vapi.batchLeads({ campaignId: opts.campaignId, leads });
  const duplicates = again.results.filter((r) => r.duplicate).length;

  // 4. Every contact of the campaign, page after page.
  const contacts: string[] = [];
  for await (const c of paginate('contacts', (page) =>
    vapi.api.GET('/api/v1/campaigns/{id}/contacts', {
      params: { path: { id: opts.campaignId }, query: { page, limit: 100 } },
    }),
  )) {
    contacts.push(`${c.externalId}: ${c.status}`);
  }

  // 5. Errors are typed: branch on reasonCode.
  let missingCampaign = '';
  try {
    await ok(vapi.api.GET('/api/v1/campaigns/{id}', { params: { path: { id: '000000000000000000000000' } } }));
  } catch (err) {
    if (err instanceof VoiceApiError) missingCampaign = `${err.status} ${err.reasonCode}`;
    else throw err;
  }

  return { mode: me.mode, accepted: first.accepted, refusals, duplicates, contacts: contacts.sort(), missingCampaign };
}
