// Over 300 lines because one service's integration cases share its started store, Kafka and service per file.
import { randomBytes, randomUUID } from 'node:crypto';
import { DomainError } from '@voiceapi/kit/errors';
import { eventRecord, EventPublisher, createKafka } from '@voiceapi/kit/events';
import { createPromiseClient, requireTenant, type CallContext } from '@voiceapi/kit/grpc';
import { createLogger } from '@voiceapi/kit/service';
import { voiceapi } from '@voiceapi/proto';
import mongoose from 'mongoose';
import { startBilling } from '../../billing/src/main';
import { startLeads } from '../../leads/src/main';
import { RecordingTokens } from '../src/domain/recording-token';
import { startTelephony } from '../src/main';
import type { Call as CallRow } from '../src/domain/call';
import { serverSettings } from '../../../test/harness/infra';
import { eventually, sleep } from '../../../test/harness/wait';
import { CallStore } from '../src/store/call-store';
import { LineStore, type Line } from '../src/store/line-store';

type Telephony = ReturnType<typeof createPromiseClient<typeof voiceapi.telephony.v1.TelephonyServiceService>>;
type Leads = ReturnType<typeof createPromiseClient<typeof voiceapi.leads.v1.LeadsServiceService>>;
type Billing = ReturnType<typeof createPromiseClient<typeof voiceapi.billing.v1.BillingServiceService>>;

const rejection = async (p: Promise<unknown>): Promise<DomainError> => {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof DomainError)) throw new Error(`expected a DomainError, got ${String(err)}`);
  return err;
};

const SECRET = randomBytes(32).toString('base64url');
const SPEEDUP = 200;

// Telephony in-process with real leads and billing services, against the harness's store and
// Kafka, over real gRPC: dial requests from leads become simulated calls, held and charged by billing.
/** What a call row carries until it is settled: live, no hold failure, not billed, nothing recorded yet. */
const UNSETTLED = {
  sandbox: false,
  holdFailed: false,
  billingStatus: 'pending',
  hasTranscript: false,
  hasAnalysis: false,
  hasRecording: false,
} as const;

describe('telephony service (gRPC + MongoDB + Kafka, with leads and billing)', () => {
  const suffix = randomBytes(4).toString('hex');
  const log = createLogger('telephony-test', 'silent');
  const base = {
    ...serverSettings(),
    GRPC_PORT: '0',
    LOG_LEVEL: 'silent',
  };
  let billing: Awaited<ReturnType<typeof startBilling>>;
  let leads: Awaited<ReturnType<typeof startLeads>>;
  let svc: Awaited<ReturnType<typeof startTelephony>>;
  let tel: Telephony;
  let lc: Leads;
  let bc: Billing;
  let conn: mongoose.Connection;

  const tenant = (mode: 'live' | 'sandbox' = 'live'): CallContext => ({ tenantId: `t-${randomUUID()}`, keyMode: mode });
  const fund = (ctx: CallContext, amount = 10_000) => bc.topUp({ amount, reference: `top:${randomUUID()}` }, ctx);
  const balance = async (ctx: CallContext) => (await bc.getBalance({}, ctx)).balance!;
  const campaign = async (ctx: CallContext, extra: Partial<voiceapi.leads.v1.CreateCampaignRequest> = {}) => {
    const c = await lc.createCampaign({ name: 'Spring', type: '', channels: [], ...extra }, ctx);
    await lc.startCampaign({ id: c.campaign!.id }, ctx);
    return c.campaign!.id;
  };
  const lead = async (ctx: CallContext, campaignId: string, phone: string) =>
    (
      await lc.ingestLead(
        {
          campaignId,
          lead: {
            phone,
            channels: ['call'],
            consent: { outboundCall: true, capturedAt: new Date(Date.now() - 3_600_000), source: 'web form' },
            templateVariables: {},
            whatsappParams: {},
          },
        },
        ctx,
      )
    ).contact!;
  const callsOf = async (ctx: CallContext, contactId: string) =>
    (await tel.listContactCalls({ contactId, page: { page: 1, limit: 100 } }, ctx)).calls;
  /** The contact's call once billing has said how it was billed. */
  const billedCall = (ctx: CallContext, contactId: string) =>
    eventually(`the billed call of ${contactId}`, async () => {
      const [c] = await callsOf(ctx, contactId);
      return c && c.billingStatus !== 'pending' && c.outcome ? c : undefined;
    });
  // San Francisco numbers, a new exchange each; the last four digits pick the simulator's scenario.
  let line = 0;
  const phone = (suffix4?: string) => {
    line++;
    return `+1415${200 + (line % 700)}${suffix4 ?? String(1000 + ((line * 37) % 8000))}`;
  };

  beforeAll(async () => {
    billing = await startBilling({
      ...base,
      MONGO_DB: `billing_tit_${suffix}`,
      INSTANCE_ID: `billing-tit-${suffix}`,
      SWEEP_INTERVAL_MS: '1000',
    });
    bc = createPromiseClient(voiceapi.billing.v1.BillingServiceService, `127.0.0.1:${billing.port}`, {
      timeoutMs: 20_000,
    });
    leads = await startLeads({
      ...base,
      MONGO_DB: `leads_tit_${suffix}`,
      INSTANCE_ID: `leads-tit-${suffix}`,
      BILLING_GRPC_ADDR: `127.0.0.1:${billing.port}`,
      CALLING_WINDOW_DEFAULT: 'always',
      SCHEDULER_INTERVAL_MS: '200',
    });
    lc = createPromiseClient(voiceapi.leads.v1.LeadsServiceService, `127.0.0.1:${leads.port}`, { timeoutMs: 20_000 });
    svc = await startTelephony({
      ...base,
      MONGO_DB: `telephony_tit_${suffix}`,
      INSTANCE_ID: `telephony-tit-${suffix}`,
      BILLING_GRPC_ADDR: `127.0.0.1:${billing.port}`,
      LEADS_GRPC_ADDR: `127.0.0.1:${leads.port}`,
      CARRIER_SIMULATOR_SPEEDUP: String(SPEEDUP),
      RECORDING_URL_SECRET: SECRET,
      DISPATCH_INTERVAL_MS: '50',
      ROLLUP_INTERVAL_MS: '100',
      RECOVERY_INTERVAL_MS: '500',
    });
    tel = createPromiseClient(voiceapi.telephony.v1.TelephonyServiceService, `127.0.0.1:${svc.port}`, {
      timeoutMs: 20_000,
    });
    conn = await mongoose.createConnection(process.env.MONGO_URL!, { dbName: `telephony_tit_${suffix}` }).asPromise();
  });
  afterAll(async () => {
    tel.close();
    lc.close();
    bc.close();
    await conn.close();
    await svc.lifecycle.stop();
    await leads.lifecycle.stop();
    await billing.lifecycle.stop();
  });

  it('dials a lead, holds before dialling, charges the simulated duration, and the feed shows all of it', async () => {
    const a = tenant();
    await fund(a, 1_000);
    const camp = await campaign(a, { maxCallSeconds: 300 });
    const contact = await lead(a, camp, phone('0000'));
    const call = await billedCall(a, contact.id);
    expect(call).toMatchObject({
      direction: 'outbound',
      status: 'completed',
      outcome: 'completed',
      durationSeconds: 42,
      campaignId: camp,
      contactId: contact.id,
      billingStatus: 'charged',
      creditsCharged: 2, // one started minute at the outbound rate
      hasTranscript: true,
      hasAnalysis: true,
      hasRecording: true,
      callSessionId: `${contact.id}:1`,
    });
    expect(call.callSid).toMatch(/^SIM/);
    expect(call.balanceAfter).toBe(998);
    expect(await balance(a)).toMatchObject({ balance: 998, held: 0, available: 998 });
    const rows = (
      await bc.listTransactions(
        { page: { page: 1, limit: 10 }, type: voiceapi.billing.v1.TransactionType.TRANSACTION_TYPE_CALL_DEDUCTION },
        a,
      )
    ).transactions;
    expect(rows).toEqual([expect.objectContaining({ amount: -2, callId: call.id, balanceAfter: 998 })]);
    // The contact followed the call to its end (from the call's end event, which the charge no longer waits behind).
    const followed = await eventually('the contact completed', async () => {
      const c = (await lc.getContact({ id: contact.id }, a)).contact;
      return c?.status === 'completed' ? c : undefined;
    });
    expect(followed).toMatchObject({ status: 'completed', lastCallId: call.id });
    // One call, with its conversation; another tenant sees nothing of it.
    const one = await tel.getCall({ callId: call.id, contactId: contact.id }, a);
    expect(one.transcript.length).toBeGreaterThan(1);
    expect(one.analysis).toMatchObject({ sentiment: 'positive', optOut: false });
    expect((await rejection(tel.getCall({ callId: call.id }, tenant()))).reasonCode).toBe('not_found');
    expect((await rejection(tel.getCall({ callId: call.id, contactId: 'someone-else' }, a))).reasonCode).toBe(
      'not_found',
    );
    expect((await tel.listCalls({ page: { page: 1, limit: 25 } }, tenant())).calls).toEqual([]);
    // The call document holds no audio, only where it is (object storage) and what it is: 42 s of 8 kHz, 16-bit audio.
    const raw = await conn.collection('calls').findOne({ _id: call.id as never });
    expect(raw!.recording).toEqual({
      key: `${a.tenantId}/${call.id}.wav`,
      contentType: 'audio/wav',
      sizeBytes: 44 + 42 * 16_000,
      durationSeconds: 42,
      storedAt: expect.any(Date),
    });
    expect(await conn.collection('recording_parts').countDocuments({})).toBe(0);
    // The conversation is written on the row with the call's end (decision 0146), no document of its own;
    // the feed's pages carry none of it.
    expect(raw!.details.transcript).toHaveLength(one.transcript.length);
    expect(await conn.collection('call_details').countDocuments({ _id: call.id as never })).toBe(0);
    const listed = await tel.listConversations({ callIds: [call.id, 'no-such-call'] }, a);
    expect(listed.conversations).toEqual([{ callId: call.id, transcript: one.transcript, analysis: one.analysis }]);
    expect((await tel.listConversations({ callIds: [call.id] }, tenant())).conversations).toEqual([]);
    const calls = new CallStore(conn);
    const scope = requireTenant(a);
    expect((await calls.page(scope, {}, 1, 10)).items[0]).not.toHaveProperty('details');
    // A call ended by telephony 1.3.0 or before keeps its conversation in call_details: read from there too.
    await conn.collection('calls').updateOne({ _id: call.id as never }, { $unset: { details: 1 } });
    await conn.collection('call_details').insertOne({
      _id: call.id as never,
      tenantId: a.tenantId,
      transcript: raw!.details.transcript,
      analysis: raw!.details.analysis,
    });
    const fromOld = await tel.getCall({ callId: call.id }, a);
    expect(fromOld.transcript).toEqual(one.transcript);
    expect(fromOld.analysis).toEqual(one.analysis);
    expect((await tel.listConversations({ callIds: [call.id] }, a)).conversations).toEqual(listed.conversations);
    // An erasure removes it wherever it is.
    await conn.collection('calls').updateOne({ _id: call.id as never }, { $set: { details: raw!.details } });
    await calls.erasePersonalData(scope, call.id);
    expect((await conn.collection('calls').findOne({ _id: call.id as never }))!.details).toBeUndefined();
    expect(await conn.collection('call_details').countDocuments({ _id: call.id as never })).toBe(0);
    const erased = await tel.getCall({ callId: call.id }, a);
    expect(erased.transcript).toEqual([]);
    // What an erasure of an older release leaves on the row (it unsets no \`details\`) is never read.
    await conn.collection('calls').updateOne({ _id: call.id as never }, { $set: { details: raw!.details } });
    expect((await tel.getCall({ callId: call.id }, a)).transcript).toEqual([]);
    expect((await tel.listConversations({ callIds: [call.id] }, a)).conversations).toEqual([]);
  });

  it('gives every simulator outcome its billing: completed and voicemail charged, no answer, busy and failed skipped, opt-out listed', async () => {
    const a = tenant();
    await fund(a, 1_000);
    const camp = await campaign(a, { maxAttempts: 1 });
    const cases = [
      ['0001', 'no_answer', 'no_answer', 0, 'skipped', 'failed'],
      ['0002', 'busy', 'busy', 0, 'skipped', 'failed'],
      ['0003', 'failed', 'failed', 0, 'skipped', 'failed'],
      ['0004', 'voicemail', 'completed', 20, 'charged', 'completed'],
      ['0005', 'completed', 'completed', 30, 'charged', 'completed'],
    ] as const;
    const contacts = await Promise.all(cases.map(([s]) => lead(a, camp, phone(s))));
    for (const [i, [, outcome, status, seconds, billingStatus, contactStatus]] of cases.entries()) {
      const c = await billedCall(a, contacts[i]!.id);
      expect(c).toMatchObject({ outcome, status, durationSeconds: seconds, billingStatus, hasRecording: seconds > 0 });
      const after = await eventually('the contact moved on', async () => {
        const k = (await lc.getContact({ id: contacts[i]!.id }, a)).contact!;
        return k.status === contactStatus ? k : undefined;
      });
      expect(after.lastCallId).toBe(c.id);
    }
    // The opted-out number is on the tenant's list now: a new lead to it is refused.
    const optedOut = (await lc.getContact({ id: contacts[4]!.id }, a)).contact!.phone;
    expect((await rejection(lead(a, camp, optedOut))).reasonCode).toBe('do_not_call');
    expect((await tel.getCall({ callId: (await callsOf(a, contacts[4]!.id))[0]!.id }, a)).analysis).toMatchObject({
      optOut: true,
    });
  });

  it('never has more calls in progress than the tenant’s package, and dials every request once', async () => {
    const a = tenant();
    await fund(a, 10_000);
    expect(await tel.setConcurrency({ maxConcurrentCalls: 2 }, a)).toEqual({ maxConcurrentCalls: 2 });
    expect((await rejection(tel.setConcurrency({ maxConcurrentCalls: 0 }, a))).reasonCode).toBe('validation_error');
    const camp = await campaign(a);
    const contacts = await Promise.all(Array.from({ length: 6 }, () => lead(a, camp, phone())));
    let most = 0;
    await eventually(
      'six calls ended',
      async () => {
        const active = (await tel.listActiveCalls({}, a)).calls;
        const inProgress = await conn.collection('lines').countDocuments({ tenantId: a.tenantId });
        most = Math.max(most, active.length, inProgress);
        const done = (await tel.listCalls({ page: { page: 1, limit: 100 }, status: 'completed' }, a)).calls;
        return done.length === 6 ? true : undefined;
      },
      60_000,
    );
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(2);
    for (const c of contacts) expect(await callsOf(a, c.id)).toHaveLength(1);
  });

  it('takes several lines in one write, never above the package, whatever another replica knew', async () => {
    const own = await mongoose
      .createConnection(process.env.MONGO_URL!, { dbName: `lines_${randomBytes(4).toString('hex')}` })
      .asPromise();
    try {
      const lines = new LineStore(own);
      const scope = requireTenant({ tenantId: 't-lines', keyMode: 'live' });
      const held: Line[] = [];
      expect((await lines.takeMany(scope, ['a', 'b', 'c', 'd', 'e'], 3, new Date(), held)).size).toBe(3);
      expect(await lines.held(scope)).toHaveLength(3);
      // A replica that knew of none of them: every insert is refused, nothing is taken.
      expect((await lines.takeMany(scope, ['f', 'g'], 3, new Date(), [])).size).toBe(0);
      // The package raised to 5: two more, however many ask.
      expect((await lines.takeMany(scope, ['f', 'g', 'h'], 5, new Date(), await lines.held(scope))).size).toBe(2);
      // Lowered to 2 with 5 held: none until calls end.
      expect((await lines.takeMany(scope, ['i'], 2, new Date(), await lines.held(scope))).size).toBe(0);
      expect(await lines.held(scope)).toHaveLength(5);
      // A list shared by takes under way can name one line twice (two met on it): the other lines stay takeable.
      const other = requireTenant({ tenantId: 't-lines-shared', keyMode: 'live' });
      expect(await lines.take(other, 'j', 2, new Date(), [])).toBe(true);
      const [line] = await lines.held(other);
      const shared: Line[] = [line!, { ...line!, callId: '' }];
      expect(await lines.take(other, 'k', 2, new Date(), shared)).toBe(true);
      expect(await lines.held(other)).toHaveLength(2);
    } finally {
      await own.close();
    }
  });

  it('moves calls asked at once in shared writes: of racing moves of one call exactly one moves it, and each caller knows whether it did', async () => {
    const own = await mongoose
      .createConnection(process.env.MONGO_URL!, { dbName: `calls_${randomBytes(4).toString('hex')}` })
      .asPromise();
    try {
      const calls = new CallStore(own);
      const scope = requireTenant({ tenantId: 't-moves', keyMode: 'live' });
      const row = (id: string): CallRow => ({
        id,
        tenantId: scope.tenantId,
        direction: 'outbound',
        status: 'queued',
        dialId: `${id}:1`,
        contactId: 'c',
        campaignId: 'k',
        fromNumber: '+14155550100',
        toNumber: '+14155550101',
        startedAt: new Date(),
        durationSeconds: 0,
        maxCallSeconds: 60,
        ...UNSETTLED,
      });
      const ids = Array.from({ length: 20 }, (_, i) => `call-${i}`);
      expect(
        await Promise.all([...ids.map((id) => calls.create(scope, row(id))), calls.create(scope, row('call-0'))]),
      ).toEqual([...ids.map(() => true), false]);
      // Two tries ring each call at once: one moves it, the other is told it did not.
      const rung = await Promise.all(ids.flatMap((id) => [calls.setRinging(id), calls.setRinging(id)]));
      for (let i = 0; i < ids.length; i++)
        expect([rung[2 * i], rung[2 * i + 1]].filter((c) => c?.status === 'ringing')).toHaveLength(1);
      const end = {
        status: 'completed' as const,
        outcome: 'completed' as const,
        endedAt: new Date(),
        durationSeconds: 30,
        hasTranscript: false,
        hasAnalysis: false,
        hasRecording: false,
      };
      // The runner and a recovery end the same call at once: one ending is written.
      const ended = await Promise.all(
        ids.flatMap((id) => [calls.finish(id, end), calls.finish(id, { ...end, durationSeconds: 99 })]),
      );
      for (let i = 0; i < ids.length; i++)
        expect([ended[2 * i], ended[2 * i + 1]].filter((c) => c !== null)).toHaveLength(1);
      for (const id of ids) expect((await calls.byId(id))?.status).toBe('completed');
      // A move from a state the call has left is refused.
      expect(await calls.setAnswered('call-1', new Date(), 'sid', false)).toBeNull();
      expect(await calls.setRinging('no-such-call')).toBeNull();
    } finally {
      await own.close();
    }
  });

  it('dials nobody twice for a redelivered dial request', async () => {
    const a = tenant();
    await fund(a);
    const camp = await campaign(a);
    const contact = await lead(a, camp, phone('0000'));
    const first = await billedCall(a, contact.id);
    // The same request again, as Kafka may redeliver it (same event id and dial id).
    const kafka = createKafka({ brokers: process.env.KAFKA_BROKERS!.split(','), clientId: 'telephony-it', log });
    const publisher = new EventPublisher(kafka);
    await publisher.connect();
    const dialRequested = {
      dialId: `${contact.id}:1`,
      tenantId: a.tenantId!,
      contactId: contact.id,
      campaignId: camp,
      phone: contact.phone,
      maxCallSeconds: 600,
      attempt: 1,
    };
    await publisher.send([
      eventRecord(
        voiceapi.events.v1.LeadsDialEvent,
        contact.id,
        { occurTime: new Date(), event: { $case: 'dialRequested', dialRequested } },
        `dial:${dialRequested.dialId}`,
      ),
    ]);
    await publisher.disconnect();
    await sleep(1_500);
    const calls = await callsOf(a, contact.id);
    expect(calls.map((c) => c.id)).toEqual([first.id]);
    expect(
      (
        await bc.listTransactions(
          { page: { page: 1, limit: 10 }, type: voiceapi.billing.v1.TransactionType.TRANSACTION_TYPE_CALL_DEDUCTION },
          a,
        )
      ).transactions,
    ).toHaveLength(1);
  });

  it('fails a dial whose hold the wallet cannot cover, without dialling it', async () => {
    const a = tenant();
    // One 10-minute call's hold is 20 credits: both leads pass the check at ingest, one dial cannot hold.
    await fund(a, 25);
    const camp = await campaign(a, { maxCallSeconds: 600 });
    const contacts = [await lead(a, camp, phone('0000')), await lead(a, camp, phone('0000'))];
    const calls = await Promise.all(contacts.map((c) => billedCall(a, c.id)));
    const refused = calls.filter((c) => c.endReason === 'insufficient_credits');
    expect(refused).toHaveLength(1);
    expect(refused[0]).toMatchObject({
      status: 'failed',
      outcome: 'failed',
      durationSeconds: 0,
      billingStatus: 'skipped',
      hasRecording: false,
    });
    expect(refused[0]!.callSid).toBeUndefined();
    const failedContact = contacts.find((c) => c.id === refused[0]!.contactId)!;
    expect(
      await eventually('the contact failed', async () => {
        const k = (await lc.getContact({ id: failedContact.id }, a)).contact!;
        return k.status === 'failed' ? k : undefined;
      }),
    ).toMatchObject({ endReason: 'insufficient_credits' });
    expect(await balance(a)).toMatchObject({ balance: 23, held: 0 });
  });

  it('answers inbound calls on owned numbers with the default answering, billed at the inbound rate', async () => {
    const a = tenant();
    await fund(a, 100);
    const number = phone('7000');
    const assigned = await tel.assignNumber({ phoneNumber: number, countryIso: 'US' }, a);
    expect(assigned.number).toMatchObject({ phoneNumber: number, status: 'active', monthlyCredits: 0 });
    const { callId } = await tel.simulateInboundCall(
      { toNumber: number, fromNumber: '+14155559999', durationSeconds: 75 },
      a,
    );
    const call = await eventually('the inbound call billed', async () => {
      const c = (await tel.getCall({ callId }, a)).call!;
      return c.billingStatus !== 'pending' ? c : undefined;
    });
    expect(call).toMatchObject({
      direction: 'inbound',
      status: 'completed',
      durationSeconds: 75,
      fromNumber: '+14155559999',
      toNumber: number,
      billingStatus: 'charged',
      creditsCharged: 2,
    });
    expect(call.agentId).toBeUndefined();
    expect(await balance(a)).toMatchObject({ balance: 98, held: 0 });
    // Only to the tenant's own numbers, and only sensible durations.
    expect(
      (await rejection(tel.simulateInboundCall({ toNumber: number, fromNumber: '+14155559999' }, tenant()))).reasonCode,
    ).toBe('not_found');
    for (const d of [-1, 86_400])
      expect(
        (
          await rejection(
            tel.simulateInboundCall({ toNumber: number, fromNumber: '+14155559999', durationSeconds: d }, a),
          )
        ).reasonCode,
      ).toBe('validation_error');
    // A wallet that cannot hold still answers; the call is billed failed, with no ledger row.
    const poor = tenant();
    const poorNumber = phone('7001');
    await tel.assignNumber({ phoneNumber: poorNumber, countryIso: 'US' }, poor);
    const { callId: unpaid } = await tel.simulateInboundCall(
      { toNumber: poorNumber, fromNumber: '+14155559998', durationSeconds: 30 },
      poor,
    );
    const failed = await eventually('the unpaid call billed', async () => {
      const c = (await tel.getCall({ callId: unpaid }, poor)).call!;
      return c.billingStatus !== 'pending' ? c : undefined;
    });
    expect(failed).toMatchObject({
      status: 'completed',
      durationSeconds: 30,
      billingStatus: 'failed',
      creditsError: 'insufficient_credits',
    });
  });

  it('signs recording links that work until they expire and fail when altered', async () => {
    const a = tenant();
    await fund(a);
    const camp = await campaign(a);
    const contact = await lead(a, camp, phone('0000'));
    const call = await billedCall(a, contact.id);
    const link = await tel.createRecordingLink({ callId: call.id }, a);
    expect(link.path).toMatch(/^\/api\/v1\/recordings\/[\w-]+\.[\w-]+$/);
    expect(link.expireTime!.getTime() - Date.now()).toBeLessThanOrEqual(15 * 60_000);
    const token = link.path.split('/').pop()!;
    const audio = await tel.openRecording({ token, offset: 0, urlOnly: false }, {});
    expect(audio.contentType).toBe('audio/wav');
    expect(audio.data.length).toBe(audio.sizeBytes);
    expect(Buffer.from(audio.data).toString('ascii', 0, 4)).toBe('RIFF');
    // A caller that reads the bucket itself gets a presigned address and no bytes: the same audio, and its ranges.
    const byUrl = await tel.openRecording({ token, offset: 0, urlOnly: true }, {});
    expect(byUrl.data.length).toBe(0);
    const whole = await fetch(byUrl.objectUrl);
    expect(whole.status).toBe(200);
    expect(Buffer.from(await whole.arrayBuffer()).equals(Buffer.from(audio.data))).toBe(true);
    const part = await fetch(byUrl.objectUrl, { headers: { Range: 'bytes=100-199' } });
    expect(part.status).toBe(206);
    expect(Buffer.from(await part.arrayBuffer()).equals(Buffer.from(audio.data).subarray(100, 200))).toBe(true);
    const flipped = token.slice(0, -2) + (token.endsWith('AA') ? 'BB' : 'AA');
    for (const bad of [
      flipped,
      token.slice(0, 20),
      `${token}x`,
      new RecordingTokens('y'.repeat(32)).sign({
        tenantId: a.tenantId!,
        callId: call.id,
        expiresAt: new Date(Date.now() + 60_000),
      }),
    ]) {
      expect((await rejection(tel.openRecording({ token: bad, offset: 0, urlOnly: false }, {}))).reasonCode).toBe(
        'recording_link_invalid',
      );
    }
    const expired = new RecordingTokens(SECRET).sign({
      tenantId: a.tenantId!,
      callId: call.id,
      expiresAt: new Date(Date.now() - 1_000),
    });
    expect((await rejection(tel.openRecording({ token: expired, offset: 0, urlOnly: false }, {}))).reasonCode).toBe(
      'recording_link_expired',
    );
    // Another tenant cannot get a link to it; a call without audio has none.
    expect((await rejection(tel.createRecordingLink({ callId: call.id }, tenant()))).reasonCode).toBe('not_found');
  });

  it('filters the feed as the spec says and refuses bad filters', async () => {
    const a = tenant();
    await fund(a);
    const [c1, c2] = [await campaign(a), await campaign(a)];
    const k1 = await lead(a, c1, phone('0000'));
    const k2 = await lead(a, c2, phone('0001'));
    await billedCall(a, k1.id);
    await billedCall(a, k2.id);
    const list = (q: Partial<voiceapi.telephony.v1.ListCallsRequest>) =>
      tel.listCalls({ page: { page: 1, limit: 25 }, ...q }, a);
    expect((await list({})).calls).toHaveLength(2);
    expect((await list({})).page).toMatchObject({ total: 2, hasMore: false });
    expect((await list({ campaignId: c1 })).calls.map((c) => c.contactId)).toEqual([k1.id]);
    expect((await list({ status: 'no_answer' })).calls.map((c) => c.contactId)).toEqual([k2.id]);
    expect((await list({ direction: 'inbound' })).calls).toEqual([]);
    expect((await list({ startedAfter: new Date(Date.now() + 60_000) })).calls).toEqual([]);
    expect((await list({ startedBefore: new Date(Date.now() - 3_600_000) })).calls).toEqual([]);
    const paged = await tel.listCalls({ page: { page: 1, limit: 1 } }, a);
    expect(paged.calls).toHaveLength(1);
    expect(paged.page).toMatchObject({ total: 2, hasMore: true });
    for (const bad of [
      { direction: 'sideways' },
      { status: 'weird' },
      { startedAfter: new Date(), startedBefore: new Date(Date.now() - 1_000) },
    ]) {
      expect((await rejection(list(bad))).reasonCode).toBe('validation_error');
    }
  });

  it('reads analytics from rollups: by day, campaign and agent, in any time zone', async () => {
    const a = tenant();
    await fund(a);
    const camp = await campaign(a);
    const ks = [
      await lead(a, camp, phone('0000')),
      await lead(a, camp, phone('0004')),
      await lead(a, camp, phone('0002')),
    ];
    for (const k of ks) await billedCall(a, k.id);
    const query = (groupBy: string, extra: Partial<voiceapi.telephony.v1.CallAnalyticsRequest> = {}) =>
      tel.callAnalytics(
        { groupBy, from: new Date(Date.now() - 86_400_000), to: new Date(Date.now() + 60_000), ...extra },
        a,
      );
    const byCampaign = await eventually('the rollups caught up', async () => {
      const r = await query('campaign');
      return r.buckets[0]?.calls === 3 && r.buckets[0].creditsCharged === 4 ? r : undefined;
    });
    expect(byCampaign.buckets).toEqual([
      { key: camp, calls: 3, completed: 1, durationSeconds: 62, avgDurationSeconds: 20.67, creditsCharged: 4 },
    ]);
    const days = (await query('day', { timeZone: 'Pacific/Kiritimati' })).buckets;
    expect(days.reduce((n, b) => n + b.calls, 0)).toBe(3);
    expect(days.every((b) => /^\d{4}-\d{2}-\d{2}$/.test(b.key!))).toBe(true);
    expect((await query('agent')).buckets).toEqual([expect.objectContaining({ calls: 3 })]);
    expect((await query('day', { direction: 'inbound' })).buckets).toEqual([]);
    for (const bad of [
      { groupBy: 'week' },
      { groupBy: 'day', timeZone: 'Mars/Olympus' },
      { groupBy: 'day', direction: 'up' },
      { groupBy: 'day', from: new Date(), to: new Date(Date.now() - 1) },
    ]) {
      expect(
        (await rejection(tel.callAnalytics({ from: new Date(Date.now() - 1_000), to: new Date(), ...bad }, a)))
          .reasonCode,
      ).toBe('validation_error');
    }
  });

  it('sells a pool number once, debiting its monthly credits; sandbox changes nothing', async () => {
    const number = phone('8000');
    expect(
      (await tel.addPoolNumber({ phoneNumber: number, countryIso: 'US', monthlyCredits: 15 }, {})).number,
    ).toMatchObject({ phoneNumber: number, status: 'available' });
    expect(
      (await rejection(tel.addPoolNumber({ phoneNumber: 'not-a-number', countryIso: 'US', monthlyCredits: 15 }, {})))
        .reasonCode,
    ).toBe('validation_error');
    const [a, b, poor] = [tenant(), tenant(), tenant()];
    await fund(a, 100);
    await fund(b, 100);
    await fund(poor, 10);
    const digits = number.slice(-7);
    expect(
      (await tel.listAvailableNumbers({ countryIso: 'US', contains: digits, limit: 10 }, a)).numbers.map(
        (n) => n.phoneNumber,
      ),
    ).toEqual([number]);
    expect((await rejection(tel.listAvailableNumbers({ contains: '12a', limit: 10 }, a))).reasonCode).toBe(
      'validation_error',
    );
    // Sandbox: accepted, nothing changes.
    expect((await tel.purchaseNumber({ phoneNumber: number }, { ...a, keyMode: 'sandbox' })).status).toBe(
      'sandbox_accepted',
    );
    // The poor tenant cannot pay: 402-worthy, and the number stays for sale.
    expect((await rejection(tel.purchaseNumber({ phoneNumber: number }, poor))).reasonCode).toBe(
      'insufficient_credits',
    );
    // Two tenants at the same instant: exactly one gets it.
    const results = await Promise.allSettled([
      tel.purchaseNumber({ phoneNumber: number }, a),
      tel.purchaseNumber({ phoneNumber: number }, b),
    ]);
    const won = results.filter((r) => r.status === 'fulfilled');
    expect(won).toHaveLength(1);
    const lost = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect((lost.reason as DomainError).reasonCode).toBe('number_already_owned');
    const winner = results[0].status === 'fulfilled' ? a : b;
    const loser = winner === a ? b : a;
    expect((won[0] as PromiseFulfilledResult<voiceapi.telephony.v1.PurchaseNumberResponse>).value).toMatchObject({
      status: 'purchased',
      creditsCharged: 15,
      balanceAfter: 85,
    });
    expect(await balance(winner)).toMatchObject({ balance: 85 });
    expect(await balance(loser)).toMatchObject({ balance: 100 });
    expect((await tel.listNumbers({ page: { page: 1, limit: 25 } }, winner)).numbers.map((n) => n.phoneNumber)).toEqual(
      [number],
    );
    expect((await tel.listNumbers({ page: { page: 1, limit: 25 } }, loser)).numbers).toEqual([]);
    expect((await tel.listAvailableNumbers({ contains: digits, limit: 10 }, a)).numbers).toEqual([]);
    // Bought again, or never offered.
    expect((await rejection(tel.purchaseNumber({ phoneNumber: number }, winner))).reasonCode).toBe(
      'number_already_owned',
    );
    expect((await rejection(tel.purchaseNumber({ phoneNumber: phone('8001') }, a))).reasonCode).toBe(
      'number_not_found',
    );
    expect((await tel.getOwnedNumber({ phoneNumber: number }, winner)).number!.phoneNumber).toBe(number);
    expect((await rejection(tel.getOwnedNumber({ phoneNumber: number }, loser))).reasonCode).toBe('not_found');
  });

  it('gives a dial its replica left half set up (call row queued, line taken) back to the dispatcher instead of failing it', async () => {
    const a = tenant();
    // What a replica killed between writing a call row and ringing leaves: the row queued, its line
    // taken, its dial still in the queue (due later here, so the live dispatcher leaves it alone).
    const queuedCall = async (dialId: string | undefined, ageMs: number) => {
      const callId = `call_${randomBytes(12).toString('hex')}`;
      const startedAt = new Date(Date.now() - ageMs);
      await conn.collection('calls').insertOne({
        _id: callId as never,
        tenantId: a.tenantId,
        direction: 'outbound',
        status: 'queued',
        ...(dialId && { dialId }),
        contactId: 'c1',
        fromNumber: '+14155550000',
        toNumber: '+14155557100',
        startedAt,
        durationSeconds: 0,
        maxCallSeconds: 600,
        ...UNSETTLED,
      });
      await conn
        .collection('lines')
        .insertOne({ _id: `${a.tenantId}:${callId}` as never, tenantId: a.tenantId, callId, takenAt: startedAt });
      return callId;
    };
    const dialId = `${randomBytes(12).toString('hex')}:1`;
    await conn.collection('dial_queue').insertOne({
      _id: dialId as never,
      tenantId: a.tenantId,
      contactId: 'c1',
      campaignId: 'k1',
      phone: '+14155557100',
      maxCallSeconds: 600,
      queuedAt: new Date(),
      notBefore: new Date(Date.now() + 3_600_000),
    });
    const young = await queuedCall(`${randomBytes(12).toString('hex')}:1`, 2_000);
    const waiting = await queuedCall(dialId, 20_000);
    const dropped = await queuedCall(`${randomBytes(12).toString('hex')}:1`, 20_000);
    // The one whose dial waits gets its line back (the dispatcher dials it again under the same row);
    // a young one may still be set up by its replica; one whose dial is gone is left until it is stale.
    expect(await svc.recovery.runOnce()).toEqual({ finished: 0, freed: 1 });
    const lines = async () =>
      (await conn.collection('lines').find({ tenantId: a.tenantId }).toArray()).map((l) => l.callId as string).sort();
    expect(await lines()).toEqual([young, dropped].sort());
    expect((await conn.collection('calls').findOne({ _id: waiting as never }))?.status).toBe('queued');
    // Two minutes on, the row whose dial is gone is ended: nobody will dial it.
    await conn
      .collection('calls')
      .updateOne({ _id: dropped as never }, { $set: { startedAt: new Date(Date.now() - 130_000) } });
    expect(await svc.recovery.runOnce()).toEqual({ finished: 1, freed: 0 });
    expect(await conn.collection('calls').findOne({ _id: dropped as never })).toMatchObject({
      status: 'failed',
      endReason: 'not_recovered',
    });
    await conn.collection('dial_queue').deleteOne({ _id: dialId as never });
  });

  it('finishes a call whose process died mid-call, as the carrier would have, and frees stray lines', async () => {
    const a = tenant();
    await fund(a);
    // What a replica killed mid-call leaves: an answered call holding a line, carried by nobody.
    const callId = `call_${randomBytes(12).toString('hex')}`;
    const startedAt = new Date(Date.now() - 120_000);
    await conn.collection('calls').insertOne({
      _id: callId as never,
      tenantId: a.tenantId,
      direction: 'inbound',
      status: 'in_progress',
      fromNumber: '+14155559997',
      toNumber: '+14155557100',
      startedAt,
      answeredAt: startedAt,
      durationSeconds: 0,
      maxCallSeconds: 3600,
      talkSeconds: 60,
      ...UNSETTLED,
    });
    await conn
      .collection('lines')
      .insertOne({ _id: `${a.tenantId}:0` as never, tenantId: a.tenantId, callId, takenAt: startedAt });
    await conn.collection('lines').insertOne({
      _id: `${a.tenantId}:1` as never,
      tenantId: a.tenantId,
      callId: 'call_never_written',
      takenAt: startedAt,
    });
    expect(await svc.recovery.runOnce()).toEqual({ finished: 1, freed: 1 });
    expect(await conn.collection('lines').countDocuments({ tenantId: a.tenantId })).toBe(0);
    const call = await eventually('the recovered call billed', async () => {
      const c = (await tel.getCall({ callId }, a)).call!;
      return c.billingStatus !== 'pending' ? c : undefined;
    });
    expect(call).toMatchObject({
      status: 'completed',
      durationSeconds: 60,
      billingStatus: 'charged',
      creditsCharged: 1,
      hasRecording: true,
    });
    // A second pass (or a late owner) changes nothing: one charge.
    expect(await svc.recovery.runOnce()).toEqual({ finished: 0, freed: 0 });
    await sleep(500);
    const rows = (
      await bc.listTransactions(
        { page: { page: 1, limit: 10 }, type: voiceapi.billing.v1.TransactionType.TRANSACTION_TYPE_CALL_DEDUCTION },
        a,
      )
    ).transactions;
    expect(rows).toHaveLength(1);
  });
});
