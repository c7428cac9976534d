// Over 300 lines because one service's integration cases share its started store, Kafka and service per file.
import { randomBytes, randomUUID } from 'node:crypto';
import mongoose from 'mongoose';
import { DomainError } from '@voiceapi/kit/errors';
import { consumerGroup, createKafka, eventRecord, EventPublisher, EventSubscriber } from '@voiceapi/kit/events';
import { createPromiseClient, newOperationId, type CallContext } from '@voiceapi/kit/grpc';
import { createLogger } from '@voiceapi/kit/service';
import { voiceapi } from '@voiceapi/proto';
import { startBilling } from '../../billing/src/main';
import { startWebhooks } from '../../webhooks/src/main';
import { windowDecision } from '../src/domain/calling-window';
import { startLeads } from '../src/main';
import { eventually, sleep } from '../../../test/harness/wait';

const { TelephonyCallEvent, LeadsDialEvent, LeadsContactEvent, CallDirection: ED } = voiceapi.events.v1;
type LeadInput = voiceapi.leads.v1.LeadInput;
type Client = ReturnType<typeof createPromiseClient<typeof voiceapi.leads.v1.LeadsServiceService>>;

// The leads service in-process against the harness's real store and Kafka, called over real
// gRPC, with a real billing service for its credit check; call outcomes arrive as Kafka events.
describe('leads service (gRPC + MongoDB + Kafka, with billing)', () => {
  const suffix = randomBytes(4).toString('hex');
  const leadsDb = `leads_it_${suffix}`;
  const log = createLogger('leads-test', 'silent');
  const kafka = createKafka({ brokers: process.env.KAFKA_BROKERS!.split(','), clientId: 'leads-it', log });
  let billing: Awaited<ReturnType<typeof startBilling>>;
  let webhooks: Awaited<ReturnType<typeof startWebhooks>>;
  let svc: Awaited<ReturnType<typeof startLeads>>;
  let second: Awaited<ReturnType<typeof startLeads>> | undefined;
  let client: Client;
  let billingClient: ReturnType<typeof createPromiseClient<typeof voiceapi.billing.v1.BillingServiceService>>;
  let conn: mongoose.Connection;
  let publisher: EventPublisher;
  let listener: EventSubscriber;
  // Distinct event ids per contact (delivery is at least once).
  const dials = new Map<string, string[]>();
  const deleted: { tenantId: string; contactId: string }[] = [];
  const cancelled: string[] = [];
  /** Contact status changes announced, by contact id. */
  const changes = new Map<string, string[]>();
  const seen = new Set<string>();
  /** How many times each dial request and status change was received (one announced again keeps its id). */
  const receipts = new Map<string, number>();
  /** Each status change as received, every time (one announced again must be the same event). */
  const bodies = new Map<string, string[]>();

  const env = () => ({
    MONGO_URL: process.env.MONGO_URL,
    KAFKA_BROKERS: process.env.KAFKA_BROKERS,
    MONGO_DB: leadsDb,
    GRPC_PORT: '0',
    LOG_LEVEL: 'silent',
    INSTANCE_ID: `leads-it-${randomUUID().slice(0, 8)}`,
    BILLING_GRPC_ADDR: `127.0.0.1:${billing.port}`,
    WEBHOOKS_GRPC_ADDR: `127.0.0.1:${webhooks.port}`,
    WEBHOOK_TYPES_CACHE_MS: '300',
    CALLING_WINDOW_DEFAULT: 'always',
    SCHEDULER_INTERVAL_MS: '3600000', // the tests run the scheduler themselves
  });
  const tenant = (): CallContext => ({ tenantId: `t-${randomUUID()}`, keyMode: 'live' });
  const rejection = async (p: Promise<unknown>): Promise<DomainError> => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    if (!(err instanceof DomainError)) throw new Error(`expected a DomainError, got ${String(err)}`);
    return err;
  };
  const fund = (ctx: CallContext, amount = 10_000) =>
    billingClient.topUp({ amount, reference: `top:${randomUUID()}` }, ctx);
  const campaign = async (ctx: CallContext, extra: Partial<voiceapi.leads.v1.CreateCampaignRequest> = {}) => {
    const c = await client.createCampaign({ name: 'Spring', type: '', channels: [], ...extra }, ctx);
    await client.startCampaign({ id: c.campaign!.id }, ctx);
    return c.campaign!.id;
  };
  const callLead = (phone: string, extra: Partial<LeadInput> = {}): LeadInput => ({
    phone,
    channels: ['call'],
    consent: { outboundCall: true, capturedAt: new Date(Date.now() - 3_600_000), source: 'web form' },
    templateVariables: {},
    whatsappParams: {},
    ...extra,
  });
  const contact = async (ctx: CallContext, id: string) => (await client.getContact({ id }, ctx)).contact!;
  const dialsOf = (contactId: string) =>
    eventually(`a dial request for ${contactId}`, async () => dials.get(contactId), 20_000);
  const ended = (ctx: CallContext, contactId: string, callId: string, outcome: string, optOut = false) =>
    publisher.send([
      eventRecord(TelephonyCallEvent, callId, {
        occurTime: new Date(),
        event: {
          $case: 'callEnded',
          callEnded: {
            callId,
            tenantId: ctx.tenantId!,
            direction: ED.CALL_DIRECTION_OUTBOUND,
            durationSeconds: outcome === 'completed' ? 42 : 0,
            sandbox: false,
            startTime: new Date(),
            endTime: new Date(),
            holdFailed: false,
            free: false,
            contactId,
            outcome,
            optOut,
          },
        },
      }),
    ]);

  beforeAll(async () => {
    billing = await startBilling({
      MONGO_URL: process.env.MONGO_URL,
      KAFKA_BROKERS: process.env.KAFKA_BROKERS,
      MONGO_DB: `billing_it_${suffix}`,
      GRPC_PORT: '0',
      LOG_LEVEL: 'silent',
      INSTANCE_ID: `billing-it-${suffix}`,
    });
    billingClient = createPromiseClient(voiceapi.billing.v1.BillingServiceService, `127.0.0.1:${billing.port}`, {
      timeoutMs: 20_000,
    });
    webhooks = await startWebhooks({
      MONGO_URL: process.env.MONGO_URL,
      KAFKA_BROKERS: process.env.KAFKA_BROKERS,
      MONGO_DB: `webhooks_it_${suffix}`,
      GRPC_PORT: '0',
      LOG_LEVEL: 'silent',
      INSTANCE_ID: `webhooks-it-${suffix}`,
      WEBHOOK_SECRETS_KEY: randomBytes(32).toString('base64url'),
      OUTBOUND_ALLOWLIST: '127.0.0.1:9',
    });
    svc = await startLeads(env());
    client = createPromiseClient(voiceapi.leads.v1.LeadsServiceService, `127.0.0.1:${svc.port}`, { timeoutMs: 20_000 });
    conn = await mongoose.createConnection(process.env.MONGO_URL!, { dbName: leadsDb }).asPromise();
    publisher = new EventPublisher(kafka);
    await publisher.connect();
    listener = new EventSubscriber(kafka, {
      group: consumerGroup('leads-it', `listener-${randomUUID().slice(0, 8)}`),
      log,
      publisher,
      fromBeginning: true,
    }).on(LeadsDialEvent, async (e, meta) => {
      receipts.set(meta.eventId, (receipts.get(meta.eventId) ?? 0) + 1);
      if (seen.has(meta.eventId)) return;
      seen.add(meta.eventId);
      if (e.event?.$case === 'contactDeleted') deleted.push(e.event.contactDeleted);
      if (e.event?.$case === 'contactCancelled') cancelled.push(e.event.contactCancelled.contactId);
      if (e.event?.$case !== 'dialRequested') return;
      const d = e.event.dialRequested;
      dials.set(d.contactId, [...(dials.get(d.contactId) ?? []), d.dialId]);
    });
    listener.on(LeadsContactEvent, async (e, meta) => {
      receipts.set(meta.eventId, (receipts.get(meta.eventId) ?? 0) + 1);
      bodies.set(meta.eventId, [...(bodies.get(meta.eventId) ?? []), JSON.stringify(e)]);
      if (seen.has(meta.eventId) || e.event?.$case !== 'contactStatusChanged') return;
      seen.add(meta.eventId);
      const c = e.event.contactStatusChanged;
      changes.set(c.contactId, [...(changes.get(c.contactId) ?? []), c.status]);
    });
    listener.start();
    await listener.waitUntilReady(30_000);
  });
  afterAll(async () => {
    await listener.stop();
    await publisher.disconnect();
    client.close();
    billingClient.close();
    await conn.close();
    await second?.lifecycle.stop();
    await svc.lifecycle.stop();
    await webhooks.lifecycle.stop();
    await billing.lifecycle.stop();
  });

  it('accepts leads only for the tenant’s running campaigns, and counts its contacts by status', async () => {
    const a = tenant();
    await fund(a);
    const draft = (await client.createCampaign({ name: 'Draft', type: '', channels: [] }, a)).campaign!;
    expect(draft).toMatchObject({
      status: 'draft',
      maxCallSeconds: 600,
      maxAttempts: 3,
      retryAfterMinutes: 60,
      channels: ['call', 'whatsapp', 'email'],
      callingWindow: { always: true },
    });
    expect(
      (await rejection(client.ingestLead({ campaignId: draft.id, lead: callLead('+14155550000') }, a))).reasonCode,
    ).toBe('campaign_not_running');
    const running = await campaign(a);
    expect(
      (await rejection(client.ingestLead({ campaignId: running, lead: callLead('+14155550000') }, tenant())))
        .reasonCode,
    ).toBe('campaign_not_found');
    await client.ingestLead({ campaignId: running, lead: callLead('+14155550000') }, a);
    const c2 = (await client.ingestLead({ campaignId: running, lead: callLead('+14155550001') }, a)).contact!;
    await client.cancelContact({ id: c2.id }, a);
    expect((await client.getCampaign({ id: running }, a)).campaign!.stats).toEqual({
      contacts: 2,
      queued: 1,
      completed: 0,
      failed: 0,
    });
    const page = await client.listCampaignContacts({ campaignId: running, page: { page: 1, limit: 1 } }, a);
    expect(page.contacts.map((c) => c.id)).toEqual([c2.id]);
    expect(page.page).toMatchObject({ total: 2, hasMore: true });
  });

  it('checks the rules in order, each with its reason, and records the compliance decision', async () => {
    const a = tenant();
    const id = await campaign(a);
    const reason = async (lead: LeadInput) => rejection(client.ingestLead({ campaignId: id, lead }, a));
    for (const phone of ['+1415555000a', '4155550000', '+15551234567']) {
      const e = await reason(callLead(phone));
      expect({ phone, reason: e.reasonCode, paths: e.details?.map((d) => d.path) }).toEqual({
        phone,
        reason: 'validation_error',
        paths: ['phone'],
      });
    }
    expect((await reason(callLead('+14155550000', { consent: { outboundCall: false } }))).reasonCode).toBe(
      'consent_required',
    );
    expect((await reason(callLead('+14155550000', { consent: undefined }))).reasonCode).toBe('consent_required');
    expect(
      (
        await reason(
          callLead('+14155550000', { consent: { outboundCall: true, capturedAt: new Date(Date.now() + 3_600_000) } }),
        )
      ).details,
    ).toEqual([{ path: 'consent.capturedAt', message: 'in the future' }]);
    await client.addTenantDoNotCall({ phone: '+1 (415) 555-0002' }, a);
    const tenantList = await reason(callLead('+14155550002'));
    expect({ reason: tenantList.reasonCode, details: tenantList.details }).toEqual({
      reason: 'do_not_call',
      details: [{ path: 'phone', message: "on the tenant's do-not-call list" }],
    });
    const platformPhone = `+1212555${String(1000 + Math.floor(Math.random() * 8999))}`;
    const added = await client.addPlatformDoNotCall({ phone: platformPhone }, {});
    expect(added).toMatchObject({ created: true, entry: { list: 'platform', phone: platformPhone } });
    expect((await client.addPlatformDoNotCall({ phone: platformPhone }, {})).created).toBe(false);
    expect((await reason(callLead(platformPhone))).details).toEqual([
      { path: 'phone', message: "on the platform's do-not-call list" },
    ]);
    // Everything else right, an empty live wallet: 402 until it can cover one call's hold.
    expect((await reason(callLead('+14155550000'))).reasonCode).toBe('insufficient_credits');
    await fund(a, 20);
    const ok = await client.ingestLead({ campaignId: id, lead: callLead('+1 415 555 0000', { name: 'Ada' }) }, a);
    expect(ok.status).toBe('accepted');
    expect(ok.contact).toMatchObject({
      phone: '+14155550000',
      name: 'Ada',
      status: 'queued',
      attempts: 0,
      sandbox: false,
      compliance: {
        doNotCallTenant: false,
        doNotCallPlatform: false,
        consent: { outboundCall: true, source: 'web form' },
        callingWindow: {
          timeZones: ['America/Los_Angeles'],
          timeZoneSource: 'number',
          open: true,
          window: { always: true },
        },
      },
    });
    expect(await dialsOf(ok.contact!.id)).toEqual([`${ok.contact!.id}:1`]);
  });

  it('schedules a lead outside the window for its opening in the called party’s zone, and checks again when it is due', async () => {
    const a = tenant();
    await fund(a);
    // Open one minute a day: closed now (but in the minute after midnight in Los Angeles).
    const id = await campaign(a, { callingWindow: { start: '00:00', end: '00:01', days: [], always: false } });
    const before = new Date();
    const c = (await client.ingestLead({ campaignId: id, lead: callLead('+14155550100') }, a)).contact!;
    const expected = windowDecision({ start: '00:00', end: '00:01' }, ['America/Los_Angeles'], before);
    if (expected.open) return; // the one minute it is open: nothing to see
    expect(c.status).toBe('scheduled');
    expect(c.nextAttemptTime?.toISOString()).toBe(expected.nextOpenAt!.toISOString());
    expect(c.compliance?.callingWindow).toMatchObject({ open: false, window: { start: '00:00', end: '00:01' } });
    // Made due early: the window is still closed, so the dial waits for its opening again.
    await conn
      .collection('schedule')
      .updateOne({ _id: `${c.id}:dial` } as never, { $set: { dueAt: new Date(Date.now() - 1000) } });
    await svc.scheduler.runNow();
    const after = await contact(a, c.id);
    expect(after.status).toBe('scheduled');
    const entry = await conn.collection('schedule').findOne({ _id: `${c.id}:dial` } as never);
    expect(entry?.dueAt.toISOString()).toBe(expected.nextOpenAt!.toISOString());
    await sleep(1000);
    expect(dials.has(c.id)).toBe(false);
  });

  it('announces a contact status change only to a tenant with an endpoint for it, and a cancellation to telephony always', async () => {
    const webhooksClient = createPromiseClient(
      voiceapi.webhooks.v1.WebhooksServiceService,
      `127.0.0.1:${webhooks.port}`,
      { timeoutMs: 20_000 },
    );
    try {
      const reads = tenant();
      const billedOnly = tenant();
      const none = tenant();
      await webhooksClient.registerEndpoint(
        { url: 'http://127.0.0.1:9/contacts', events: ['contact.status_changed'] },
        reads,
      );
      await webhooksClient.registerEndpoint(
        { url: 'http://127.0.0.1:9/billed', events: ['call.outbound.billed'] },
        billedOnly,
      );
      const contacts = new Map<CallContext, string>();
      for (const ctx of [reads, billedOnly, none]) {
        await fund(ctx);
        const id = await campaign(ctx);
        const c = (await client.ingestLead({ campaignId: id, lead: callLead('+14155550700') }, ctx)).contact!;
        expect((await client.cancelContact({ id: c.id }, ctx)).contact?.status).toBe('cancelled');
        contacts.set(ctx, c.id);
      }
      // Telephony hears of every cancellation; the tenant's webhooks only of the reading tenant's.
      await eventually(
        'every cancellation announced to telephony',
        async () => ([...contacts.values()].every((id) => cancelled.includes(id)) ? true : undefined),
        20_000,
      );
      await eventually("the reading tenant's change announced", async () => changes.get(contacts.get(reads)!), 20_000);
      await sleep(500); // the others' changes, had they been announced, were released with their cancellations
      expect(changes.get(contacts.get(reads)!)).toEqual(['cancelled']);
      expect([changes.get(contacts.get(billedOnly)!), changes.get(contacts.get(none)!)]).toEqual([
        undefined,
        undefined,
      ]);

      // An endpoint registered later gets the tenant's changes once leads has asked again.
      await webhooksClient.registerEndpoint({ url: 'http://127.0.0.1:9/later', events: [] }, none);
      await sleep(400);
      const id = await campaign(none);
      const later = (await client.ingestLead({ campaignId: id, lead: callLead('+14155550701') }, none)).contact!;
      await client.cancelContact({ id: later.id }, none);
      expect(
        await eventually(
          'the change announced after the endpoint was registered',
          async () => changes.get(later.id),
          20_000,
        ),
      ).toEqual(['cancelled']);
    } finally {
      webhooksClient.close();
    }
  });

  it('lets telephony claim each dial once, and never a cancelled contact or a number listed after ingest', async () => {
    const a = tenant();
    await fund(a);
    const id = await campaign(a);
    const one = (await client.ingestLead({ campaignId: id, lead: callLead('+14155550200') }, a)).contact!;
    const claim = (contactId: string, dialId: string) => client.claimDial({ contactId, dialId }, a);
    expect(await claim(one.id, `${one.id}:1`)).toMatchObject({
      allowed: true,
      phone: '+14155550200',
      maxCallSeconds: 600,
      campaignId: id,
    });
    expect(await claim(one.id, `${one.id}:1`)).toMatchObject({ allowed: false, refusal: 'already_claimed' });
    expect(await contact(a, one.id)).toMatchObject({ status: 'dialing', attempts: 1 });
    // Claims of one dial id asked at once (a redelivered request racing the first): one is allowed.
    const raced = (await client.ingestLead({ campaignId: id, lead: callLead('+14155550203') }, a)).contact!;
    const answers = await Promise.all(Array.from({ length: 5 }, () => claim(raced.id, `${raced.id}:1`)));
    expect(answers.filter((r) => r.allowed)).toHaveLength(1);
    expect(answers.filter((r) => !r.allowed).map((r) => r.refusal)).toEqual(Array(4).fill('already_claimed'));
    expect(await contact(a, raced.id)).toMatchObject({ status: 'dialing', attempts: 1 });

    const two = (await client.ingestLead({ campaignId: id, lead: callLead('+14155550201') }, a)).contact!;
    expect((await client.cancelContact({ id: two.id }, a)).contact?.status).toBe('cancelled');
    expect(await claim(two.id, `${two.id}:1`)).toMatchObject({ allowed: false, refusal: 'not_pending' });

    const three = (await client.ingestLead({ campaignId: id, lead: callLead('+14155550202') }, a)).contact!;
    await client.addTenantDoNotCall({ phone: '+14155550202' }, a);
    expect(await claim(three.id, `${three.id}:1`)).toMatchObject({ allowed: false, refusal: 'do_not_call' });
    expect(await contact(a, three.id)).toMatchObject({ status: 'failed', endReason: 'do_not_call' });

    const sandbox = { ...a, keyMode: 'sandbox' as const };
    const four = (await client.ingestLead({ campaignId: id, lead: callLead('+14155550203') }, sandbox)).contact!;
    expect(await claim(four.id, `${four.id}:1`)).toMatchObject({ allowed: false, refusal: 'sandbox' });
    expect(await claim('665f1c2b9d3e4a0012345678', '665f1c2b9d3e4a0012345678:1')).toMatchObject({
      allowed: false,
      refusal: 'not_found',
    });
  });

  it('follows call outcomes: retries a no-answer after the delay, fails at the attempt limit, and honours an opt-out at once', async () => {
    const a = tenant();
    await fund(a);
    const id = await campaign(a, { maxAttempts: 2, retryAfterMinutes: 1 });
    const c = (await client.ingestLead({ campaignId: id, lead: callLead('+14155550001') }, a)).contact!;
    expect((await client.claimDial({ contactId: c.id, dialId: `${c.id}:1` }, a)).allowed).toBe(true);
    const endedAt = Date.now();
    await ended(a, c.id, `call-${randomUUID()}`, 'no_answer');
    const retry = await eventually(
      'the retry',
      async () => {
        const x = await contact(a, c.id);
        return x.status === 'scheduled' ? x : undefined;
      },
      20_000,
    );
    expect(retry).toMatchObject({ attempts: 1, lastOutcome: 'no_answer' });
    expect(Math.abs(retry.nextAttemptTime!.getTime() - (endedAt + 60_000))).toBeLessThan(5_000);
    await conn
      .collection('schedule')
      .updateOne({ _id: `${c.id}:dial` } as never, { $set: { dueAt: new Date(Date.now() - 1000) } });
    await svc.scheduler.runNow();
    await eventually(
      'the second dial request',
      async () => ((dials.get(c.id)?.length ?? 0) >= 2 ? true : undefined),
      20_000,
    );
    expect(dials.get(c.id)).toEqual([`${c.id}:1`, `${c.id}:2`]);
    expect((await client.claimDial({ contactId: c.id, dialId: `${c.id}:2` }, a)).allowed).toBe(true);
    await ended(a, c.id, `call-${randomUUID()}`, 'busy');
    await eventually(
      'failed at the limit',
      async () => ((await contact(a, c.id)).status === 'failed' ? true : undefined),
      20_000,
    );
    expect(await contact(a, c.id)).toMatchObject({ attempts: 2, endReason: 'max_attempts', lastOutcome: 'busy' });

    const o = (await client.ingestLead({ campaignId: id, lead: callLead('+14155550005') }, a)).contact!;
    const followup = await client.createFollowup(
      { contactId: o.id, scheduledTime: new Date(Date.now() + 86_400_000) },
      a,
    );
    expect((await client.claimDial({ contactId: o.id, dialId: `${o.id}:1` }, a)).allowed).toBe(true);
    await ended(a, o.id, `call-${randomUUID()}`, 'completed', true);
    await eventually(
      'the opt-out',
      async () => ((await contact(a, o.id)).endReason === 'opted_out' ? true : undefined),
      20_000,
    );
    expect(await contact(a, o.id)).toMatchObject({ status: 'completed', endReason: 'opted_out' });
    expect((await rejection(client.ingestLead({ campaignId: id, lead: callLead('+14155550005') }, a))).details).toEqual(
      [{ path: 'phone', message: "on the tenant's do-not-call list" }],
    );
    expect(await conn.collection('schedule').countDocuments({ contactId: o.id })).toBe(0);
    expect(
      (await conn.collection('followups').findOne({ _id: new mongoose.Types.ObjectId(followup.followup!.id) } as never))
        ?.status,
    ).toBe('cancelled');
  });

  it('renders WhatsApp and email templates, names every missing value, and sends through the adapter', async () => {
    const a = tenant();
    const id = await campaign(a);
    const wa = (
      await client.createTemplate({ channel: 'whatsapp', name: 'Reminder', body: 'Hi {{1}}, your slot is {{2}}' }, a)
    ).template!;
    const em = (
      await client.createTemplate(
        {
          channel: 'email',
          name: 'Welcome',
          subject: 'Hello {{first_name}}',
          body: 'Dear {{first_name}}, see {{link}}',
        },
        a,
      )
    ).template!;
    expect(wa.variables).toEqual(['1', '2']);
    expect(
      (await rejection(client.createTemplate({ channel: 'whatsapp', name: 'Bad', body: 'Hi {{name}}' }, a))).reasonCode,
    ).toBe('validation_error');
    const lead = (extra: Partial<LeadInput>): LeadInput => ({
      phone: '+14155550300',
      email: 'ada@example.com',
      channels: ['whatsapp', 'email'],
      templateVariables: {},
      whatsappParams: {},
      whatsappTemplateId: wa.id,
      emailTemplateId: em.id,
      ...extra,
    });
    const missing = await rejection(
      client.ingestLead(
        { campaignId: id, lead: lead({ whatsappParams: { '1': 'Ada' }, templateVariables: { first_name: 'Ada' } }) },
        a,
      ),
    );
    expect(missing.details?.map((d) => d.path)).toEqual(['whatsappParams.2', 'templateVariables.link']);
    const foreign = (await client.createTemplate({ channel: 'whatsapp', name: 'Theirs', body: 'Hi {{1}}' }, tenant()))
      .template!;
    expect(
      (await rejection(client.ingestLead({ campaignId: id, lead: lead({ whatsappTemplateId: foreign.id }) }, a)))
        .details?.[0]?.path,
    ).toBe('whatsappTemplateId');
    expect(
      (await rejection(client.ingestLead({ campaignId: id, lead: lead({ email: undefined }) }, a))).details?.map(
        (d) => d.path,
      ),
    ).toEqual(['email']);

    const c = (
      await client.ingestLead(
        {
          campaignId: id,
          lead: lead({
            whatsappParams: { '1': 'Ada', '2': 'Tue {{3}}' },
            templateVariables: { first_name: 'Ada', link: 'https://x.example' },
          }),
        },
        a,
      )
    ).contact!;
    expect(c.compliance).toBeUndefined();
    const sent = await eventually(
      'both messages sent',
      async () => {
        const list = (await client.listMessages({ channel: '', limit: 10 }, a)).messages;
        return list.length === 2 && list.every((m) => m.status === 'sent') ? list : undefined;
      },
      20_000,
    );
    expect(sent.map((m) => [m.channel, m.to, m.subject ?? null, m.body]).sort()).toEqual([
      ['email', 'ada@example.com', 'Hello Ada', 'Dear Ada, see https://x.example'],
      ['whatsapp', '+14155550300', null, 'Hi Ada, your slot is Tue {{3}}'],
    ]);
    expect((await client.listMessages({ channel: 'email', limit: 10 }, a)).messages).toHaveLength(1);
    await eventually(
      'messaged',
      async () => ((await contact(a, c.id)).status === 'messaged' ? true : undefined),
      20_000,
    );
  });

  it('stores an ingest sent again with its operation id once, and answers the contact the first try stored', async () => {
    const a = tenant();
    await fund(a);
    const id = await campaign(a);
    const wa = (await client.createTemplate({ channel: 'whatsapp', name: 'R', body: 'Hi {{1}}' }, a)).template!;
    const lead = callLead('+14155550500', {
      channels: ['call', 'whatsapp'],
      whatsappTemplateId: wa.id,
      whatsappParams: { '1': 'Ada' },
    });
    // A try after one lost in flight (one after the other), and two tries racing (the first still running on a dying replica).
    const once = { ...a, operationId: newOperationId() };
    const first = (await client.ingestLead({ campaignId: id, lead }, once)).contact!;
    const again = (await client.ingestLead({ campaignId: id, lead }, once)).contact!;
    expect(first.id).toBe(once.operationId);
    expect(again).toEqual(first);
    const racing = { ...a, operationId: newOperationId() };
    const [x, y] = await Promise.all([
      client.ingestLead({ campaignId: id, lead: { ...lead, phone: '+14155550501' } }, racing),
      client.ingestLead({ campaignId: id, lead: { ...lead, phone: '+14155550501' } }, racing),
    ]);
    expect(x.contact!.id).toBe(racing.operationId);
    expect(y.contact).toEqual(x.contact);
    // One contact, one message and one dial request each.
    expect(await conn.collection('contacts').countDocuments({ tenantId: a.tenantId })).toBe(2);
    expect(await conn.collection('messages').countDocuments({ tenantId: a.tenantId })).toBe(2);
    await dialsOf(first.id);
    await dialsOf(x.contact!.id);
    await sleep(1_000);
    expect([dials.get(first.id), dials.get(x.contact!.id)]).toEqual([[`${first.id}:1`], [`${x.contact!.id}:1`]]);
    // Without an operation id each ingest is a contact of its own.
    const plain = (await client.ingestLead({ campaignId: id, lead: { ...lead, phone: '+14155550502' } }, a)).contact!;
    expect([first.id, x.contact!.id]).not.toContain(plain.id);
    // A sandbox ingest sent again likewise.
    const sandbox = { ...a, keyMode: 'sandbox' as const, operationId: newOperationId() };
    const s1 = (await client.ingestLead({ campaignId: id, lead: { ...lead, phone: '+14155550503' } }, sandbox))
      .contact!;
    expect(
      (await client.ingestLead({ campaignId: id, lead: { ...lead, phone: '+14155550503' } }, sandbox)).contact,
    ).toEqual(s1);
  });

  it('sandbox: the same checks, recorded as sandbox_accepted, and nothing dialled, sent or charged', async () => {
    const a = tenant();
    const sandbox = { ...a, keyMode: 'sandbox' as const };
    const id = await campaign(a);
    const wa = (await client.createTemplate({ channel: 'whatsapp', name: 'R', body: 'Hi {{1}}' }, a)).template!;
    const r = await client.ingestLead(
      {
        campaignId: id,
        lead: callLead('+14155550400', {
          channels: ['call', 'whatsapp'],
          whatsappTemplateId: wa.id,
          whatsappParams: { '1': 'Ada' },
        }),
      },
      sandbox,
    );
    expect(r).toMatchObject({
      status: 'sandbox_accepted',
      contact: { status: 'sandbox_accepted', sandbox: true, compliance: { doNotCallTenant: false } },
    });
    await client.addTenantDoNotCall({ phone: '+14155550401' }, a);
    expect(
      (await rejection(client.ingestLead({ campaignId: id, lead: callLead('+14155550401') }, sandbox))).reasonCode,
    ).toBe('do_not_call');
    await sleep(1500);
    expect(dials.has(r.contact!.id)).toBe(false);
    expect((await client.listMessages({ channel: '', limit: 10 }, a)).messages).toEqual([]);
    expect((await billingClient.getBalance({}, a)).balance).toMatchObject({ balance: 0, held: 0 });
  });

  it('routes events to campaigns, and refuses unmapped types and foreign campaigns', async () => {
    const a = tenant();
    await fund(a);
    const id = await campaign(a);
    const other = await campaign(a);
    expect(
      (await rejection(client.putEventRoute({ eventType: 'deal.won', campaignId: await campaign(tenant()) }, a)))
        .reasonCode,
    ).toBe('campaign_not_found');
    await client.putEventRoute({ eventType: 'deal.won', campaignId: id }, a);
    await client.putEventRoute({ eventType: 'deal.won', campaignId: other }, a);
    expect((await client.listEventRoutes({}, a)).routes.map((r) => [r.eventType, r.campaignId])).toEqual([
      ['deal.won', other],
    ]);
    expect(
      (await rejection(client.ingestEvent({ eventType: 'deal.lost', lead: callLead('+14155550500') }, a))).reasonCode,
    ).toBe('event_route_not_found');
    const r = await client.ingestEvent({ eventType: 'deal.won', lead: callLead('+14155550500') }, a);
    expect(r.contact?.campaignId).toBe(other);
    await client.deleteEventRoute({ eventType: 'deal.won' }, a);
    expect((await rejection(client.deleteEventRoute({ eventType: 'deal.won' }, a))).reasonCode).toBe('not_found');
  });

  it('erases a contact’s personal data everywhere, keeps its do-not-call entry, and keeps tenants apart', async () => {
    const a = tenant();
    await fund(a);
    const id = await campaign(a);
    const wa = (await client.createTemplate({ channel: 'whatsapp', name: 'R', body: 'Hi {{1}}' }, a)).template!;
    const c = (
      await client.ingestLead(
        {
          campaignId: id,
          lead: callLead('+14155550600', {
            channels: ['call', 'whatsapp'],
            whatsappTemplateId: wa.id,
            whatsappParams: { '1': 'Ada' },
          }),
        },
        a,
      )
    ).contact!;
    await client.createFollowup(
      { contactId: c.id, scheduledTime: new Date(Date.now() + 86_400_000), channel: 'call' },
      a,
    );
    await client.claimDial({ contactId: c.id, dialId: `${c.id}:1` }, a);
    await client.addTenantDoNotCall({ phone: '+14155550600' }, a);
    expect((await rejection(client.getContact({ id: c.id }, tenant()))).reasonCode).toBe('not_found');
    expect((await rejection(client.deleteContact({ id: c.id }, tenant()))).reasonCode).toBe('not_found');
    await client.deleteContact({ id: c.id }, a);
    expect((await rejection(client.getContact({ id: c.id }, a))).reasonCode).toBe('not_found');
    for (const collection of ['messages', 'followups', 'schedule']) {
      expect({ collection, left: await conn.collection(collection).countDocuments({ contactId: c.id }) }).toEqual({
        collection,
        left: 0,
      });
    }
    expect(await conn.collection('contacts').countDocuments({ phone: '+14155550600', tenantId: a.tenantId })).toBe(0);
    expect(
      await conn.collection('do_not_call_tenant').countDocuments({ _id: `${a.tenantId}:+14155550600` } as never),
    ).toBe(1);
    // Announced once, so telephony erases the calls' personal data too.
    await eventually(
      'ContactDeleted published',
      async () => (deleted.some((d) => d.contactId === c.id) ? true : undefined),
      20_000,
    );
    expect(deleted.filter((d) => d.contactId === c.id)).toEqual([{ tenantId: a.tenantId, contactId: c.id }]);
  });

  it('sends a dial request once its contact is stored, no outbox document; asked, requests a queued contact’s dial again under the same id (decision 0149)', async () => {
    const a = tenant();
    await fund(a);
    const id = await campaign(a);
    // Every event the outbox stores moves its counter by one.
    const stored = async () =>
      ((await conn.collection('outbox_sequence').findOne({ _id: 'outbox' as never })) as { value?: number } | null)
        ?.value ?? 0;
    await svc.outbox.flush(); // nothing waits in the outbox: the relay may send at once
    const before = await stored();
    const c = (await client.ingestLead({ campaignId: id, lead: callLead('+14155550710') }, a)).contact!;
    expect(await dialsOf(c.id)).toEqual([`${c.id}:1`]);
    expect(await stored()).toBe(before);
    // The contact is still queued (no telephony here): its dial is requested again, the same request.
    expect(await svc.dialing.reannounceQueued(new Date(Date.now() - 60_000))).toBeGreaterThanOrEqual(1);
    await eventually('requested again', async () => ((receipts.get(`dial:${c.id}:1`) ?? 0) >= 2 ? true : undefined));
    expect(dials.get(c.id)).toEqual([`${c.id}:1`]);
  });

  it('sends a call’s status moves once made, no outbox document; a claim tried again and a redelivered call event announce the move again under its id (decision 0150)', async () => {
    const a = tenant();
    const webhooksClient = createPromiseClient(
      voiceapi.webhooks.v1.WebhooksServiceService,
      `127.0.0.1:${webhooks.port}`,
      { timeoutMs: 20_000 },
    );
    try {
      await webhooksClient.registerEndpoint({ url: 'http://127.0.0.1:9/crm', events: [] }, a);
    } finally {
      webhooksClient.close();
    }
    await sleep(400); // leads' cache of who reads status changes
    await fund(a);
    const id = await campaign(a);
    const stored = async () =>
      ((await conn.collection('outbox_sequence').findOne({ _id: 'outbox' as never })) as { value?: number } | null)
        ?.value ?? 0;
    await svc.outbox.flush();
    const c = (await client.ingestLead({ campaignId: id, lead: callLead('+14155550720') }, a)).contact!;
    await dialsOf(c.id);
    const before = await stored();
    const callId = `call-${randomUUID()}`;
    const started = () =>
      publisher.send([
        eventRecord(TelephonyCallEvent, callId, {
          occurTime: new Date(),
          event: {
            $case: 'callStarted',
            callStarted: {
              callId,
              tenantId: a.tenantId!,
              direction: ED.CALL_DIRECTION_OUTBOUND,
              sandbox: false,
              startTime: new Date(),
              campaignId: id,
              contactId: c.id,
            },
          },
        }),
      ]);
    const idsOf = (status: string) => [...receipts.keys()].filter((k) => k.startsWith(`status:${c.id}:${status}:`));
    /** The move's one event, received again after `repeat`, the same event as before. */
    const announcedAgain = async (status: string, repeat: () => Promise<unknown>) => {
      const [id] = await eventually(`the ${status} move`, async () =>
        idsOf(status).length ? idsOf(status) : undefined,
      );
      const before = receipts.get(id!)!;
      await repeat();
      await eventually(`the ${status} move announced again`, async () =>
        receipts.get(id!)! > before ? true : undefined,
      );
      expect(idsOf(status)).toEqual([id]);
      expect(new Set(bodies.get(id!)).size).toBe(1);
    };

    expect((await client.claimDial({ contactId: c.id, dialId: `${c.id}:1` }, a)).allowed).toBe(true);
    await announcedAgain('dialing', async () =>
      expect(await client.claimDial({ contactId: c.id, dialId: `${c.id}:1` }, a)).toMatchObject({
        refusal: 'already_claimed',
      }),
    );
    await started();
    await announcedAgain('in_call', started);
    await ended(a, c.id, callId, 'completed');
    await announcedAgain('completed', () => ended(a, c.id, callId, 'completed'));

    expect(changes.get(c.id)).toEqual(['dialing', 'in_call', 'completed']);
    expect(await stored()).toBe(before);
  });

  it('loses nothing when the process dies between the write and the publish', async () => {
    const a = tenant();
    await fund(a);
    const id = await campaign(a);
    // The relay stops (as in a crash right after the write): the dial request stays in the outbox.
    await svc.outbox.stop();
    const c = (await client.ingestLead({ campaignId: id, lead: callLead('+14155550700') }, a)).contact!;
    expect(await conn.collection('outbox').countDocuments({ _id: `dial:${c.id}:1` } as never)).toBe(1);
    await sleep(1500);
    expect(dials.has(c.id)).toBe(false);
    // The relay shares its lease with the scheduler (one lease per process): a crash ends both, and
    // the scheduler's stop lets the lease go, as its expiry would after a crash.
    await svc.scheduler.stop();
    // Another replica (or the restarted process) relays it, once.
    second = await startLeads(env());
    expect(await dialsOf(c.id)).toEqual([`${c.id}:1`]);
    await sleep(1000);
    expect(dials.get(c.id)).toEqual([`${c.id}:1`]);
    expect(await conn.collection('outbox').countDocuments({ _id: `dial:${c.id}:1` } as never)).toBe(0);
    // Taking the lease, it also requests again the dials of contacts queued lately (decision 0149):
    // what a holder that died between a contact's write and its request's send left unsent.
    const before = receipts.get(`dial:${c.id}:1`) ?? 0;
    await eventually(
      'requested again by the new holder',
      async () => ((receipts.get(`dial:${c.id}:1`) ?? 0) > before ? true : undefined),
      30_000,
    );
  });
});
