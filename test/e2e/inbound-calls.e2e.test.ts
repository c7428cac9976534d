// Over 300 lines because its cases share one started system (a few seconds to start per file); split by area only where that cost pays.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createPromiseClient } from '@voiceapi/kit/grpc';
import { voiceapi } from '@voiceapi/proto';
import { call, startSystem, tenantWithKey, type System } from '../harness/system';
import { eventually } from '../harness/wait';

// An inbound call to a number with an active agent, through the real gateway, telephony, agents,
// companies and billing services: the agent answers with its script's opening line, and calls the
// tenant's custom API (a real local server, allow-listed) as its flags say: CRM lookup, validation,
// slots, booking. A failing step never breaks the call; deactivation stops answering at once
// (../shared/guide/api-decisions.md "The tenant's custom API", "Calls without an agent", "An
// inbound call answered by an agent").

type Json = Record<string, any>;
const SCOPES = ['inbound:read', 'inbound:write', 'companies:read', 'companies:write', 'calls:read', 'credits:read'];
const SECRET = 'clinic-bearer-4f1c9a-secret';
const PATIENT = '+14155550100';
const SLOT = '2026-11-25T15:30:00-05:00';

interface Seen {
  method: string;
  path: string;
  query: Record<string, string>;
  body: unknown;
  auth: string | undefined;
}

describe('an inbound call answered by its agent', () => {
  let sys: System;
  let gw: string;
  let customApi: Server;
  let apiBase: string;
  let telephony: ReturnType<typeof createPromiseClient<typeof voiceapi.telephony.v1.TelephonyServiceService>>;
  const seen: Seen[] = [];

  beforeAll(async () => {
    customApi = createServer((req, res) => clinicApi(req, res));
    await new Promise<void>((r) => customApi.listen(0, '127.0.0.1', r));
    const port = (customApi.address() as AddressInfo).port;
    apiBase = `http://127.0.0.1:${port}`;
    sys = await startSystem({
      serviceEnv: {
        agents: { OUTBOUND_ALLOWLIST: `127.0.0.1:${port}`, SCRIPT_WORKER_INTERVAL_MS: '200' },
        telephony: { CARRIER_SIMULATOR_SPEEDUP: '200' },
      },
    });
    gw = sys.gateways[0]!.url;
    telephony = createPromiseClient(voiceapi.telephony.v1.TelephonyServiceService, `127.0.0.1:${sys.ports.telephony}`, {
      timeoutMs: 10_000,
    });
  });
  afterAll(async () => {
    telephony?.close();
    await sys?.stop();
    customApi.closeAllConnections();
    await new Promise((r) => customApi.close(r));
  });

  /**
   * The clinic's own API. `/ok/...` follows the contract; `/refuse/...` validates no one; `/slow/...`
   * never answers; `/big/...` answers 10 MB; `/redirect/...` sends callers to the cloud metadata address; `/broken/...`
   * answers the lookup and then invalid JSON.
   */
  function clinicApi(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://x');
    const [, mode, ...rest] = url.pathname.split('/');
    const path = `/${rest.join('/')}`;
    let raw = '';
    req.on('data', (c: Buffer) => (raw += c.toString()));
    req.on('end', () => {
      seen.push({
        method: req.method ?? '',
        path,
        query: Object.fromEntries(url.searchParams),
        body: raw ? JSON.parse(raw) : undefined,
        auth: req.headers.authorization,
      });
      if (mode === 'slow') return;
      if (mode === 'big') {
        res.setHeader('content-type', 'application/json');
        return void res.end(Buffer.alloc(10 * 1024 * 1024, 0x20));
      }
      if (mode === 'redirect') {
        res.writeHead(302, { location: 'http://169.254.169.254/latest/meta-data/' });
        return void res.end();
      }
      res.setHeader('content-type', 'application/json');
      if (mode === 'broken' && path !== '/crm/lookup') return void res.end('{"slots": [oops');
      if (req.method === 'GET' && path.startsWith('/doctors'))
        return void res.end(
          JSON.stringify({
            doctors: [
              { id: 'd1', name: 'Dr. Rivera' },
              { id: 'd2', name: 'Dr. Okafor' },
            ],
          }),
        );
      if (req.method === 'POST' && path === '/crm/lookup') {
        const { phone } = JSON.parse(raw) as { phone: string };
        return void res.end(
          JSON.stringify(
            phone === PATIENT ? { found: true, record: { name: 'Ada Lovelace', patientId: 'p-17' } } : { found: false },
          ),
        );
      }
      if (req.method === 'POST' && path === '/validate')
        return void res.end(
          JSON.stringify(mode === 'refuse' ? { valid: false, reason: 'the insurance has lapsed' } : { valid: true }),
        );
      if (req.method === 'GET' && path === '/slots')
        return void res.end(JSON.stringify({ slots: [{ start: SLOT }, { start: '2026-11-25T16:00:00-05:00' }] }));
      if (req.method === 'POST' && path === '/appointments')
        return void res.end(JSON.stringify({ appointmentId: 'apt-42', confirmed: true }));
      res.statusCode = 404;
      res.end('{}');
    });
  }

  const admin = (path: string, body?: unknown) =>
    call(`${gw}/admin/v1${path}`, { admin: true, ...(body !== undefined && { body }) });
  const api = (key: string, path: string, body?: unknown, method?: string) =>
    call(`${gw}/api/v1${path}`, { key, ...(body !== undefined && { body }), ...(method && { method }) });
  let numberSeq = 1000 + Math.floor(Math.random() * 8000);

  /** A funded clinic with a number, a company in New York and an active agent on the number. */
  async function clinic(agentFields: Json) {
    const t = await tenantWithKey(gw, { scopes: SCOPES, rateLimitPerSecond: 10_000 });
    expect((await admin(`/tenants/${t.tenantId}/credits`, { amount: 1_000 })).status).toBe(201);
    const phoneNumber = `+1628556${++numberSeq}`;
    expect((await admin(`/tenants/${t.tenantId}/numbers`, { phoneNumber, countryIso: 'US' })).status).toBe(201);
    const company = await api(t.key, '/companies', { name: 'Sunrise Clinic', timezone: 'America/New_York' });
    const created = await api(t.key, '/inbound-agents', {
      name: 'Front desk',
      phoneNumber,
      companyId: company.body.company.id,
      greetingMessage: 'Sunrise Clinic, Ada speaking. How can I help?',
      ...agentFields,
    });
    expect(created.status).toBe(201);
    const agentId = created.body.agent.id as string;
    if (created.body.agent.customApiBaseUrl?.endsWith('/ok'))
      expect(
        (await call(`${gw}/api/v1/inbound-agents/${agentId}/sync-doctors`, { key: t.key, method: 'POST' })).status,
      ).toBe(200);
    await activate(t.key, agentId);
    return { ...t, phoneNumber, agentId };
  }
  async function activate(key: string, agentId: string) {
    expect((await call(`${gw}/api/v1/inbound-agents/${agentId}/generate-script`, { key, method: 'POST' })).status).toBe(
      202,
    );
    await eventually('the script ready', () => api(key, `/inbound-agents/${agentId}`), 30_000, {
      done: (r) => r.body.agent.inboundScriptStatus === 'ready',
      intervalMs: 100,
    });
    expect((await api(key, `/inbound-agents/${agentId}/activate`, { activate: true })).status).toBe(200);
  }
  /** Rings the number from `from`; the feed item once the call is billed. */
  async function ring(t: { tenantId: string; key: string; phoneNumber: string }, from = PATIENT): Promise<Json> {
    const sim = await admin(`/tenants/${t.tenantId}/simulate/inbound-call`, {
      toNumber: t.phoneNumber,
      fromNumber: from,
      durationSeconds: 90,
    });
    expect(sim.status).toBe(202);
    const callId = sim.body.callId as string;
    const feed = await eventually('the call billed', () => api(t.key, '/calls?direction=inbound&limit=100'), 30_000, {
      done: (r) => r.body.calls?.find((c: Json) => c.id === callId)?.billingStatus === 'charged',
      intervalMs: 100,
    });
    return feed.body.calls.find((c: Json) => c.id === callId);
  }
  const transcriptOf = async (tenantId: string, callId: string) =>
    (await telephony.getCall({ callId }, { tenantId, keyMode: 'live' })).transcript.map((t) => [t.role, t.text]);

  it('answers with its greeting, looks the caller up, validates, offers a slot and books it through the custom API', async () => {
    const t = await clinic({
      customApiBaseUrl: `${apiBase}/ok`,
      customApiSecret: SECRET,
      appointmentScope: 'doctor',
      branchId: 'b-1',
      doctorId: 'd1',
      validateHookEnabled: true,
      slotsEnabled: true,
      bookingEnabled: true,
    });
    seen.length = 0;
    const answeredOn = new Date();
    const item = await ring(t);
    expect(item).toMatchObject({
      direction: 'inbound',
      status: 'completed',
      agentId: t.agentId,
      agentName: 'Front desk',
      hasTranscript: true,
      hasAnalysis: true,
      durationSeconds: 90,
      creditsCharged: 2,
    });
    expect(item.summary).toBe(`Appointment booked with Dr. Rivera at ${SLOT} (appointment apt-42).`);

    const today = new Intl.DateTimeFormat('en-CA', { timeZone: 'America/New_York' }).format(answeredOn);
    expect(seen.map((s) => [s.method, s.path.split('?')[0], s.query, s.body])).toEqual([
      ['POST', '/crm/lookup', {}, { phone: PATIENT }],
      ['POST', '/validate', {}, { phone: PATIENT, record: { name: 'Ada Lovelace', patientId: 'p-17' } }],
      ['GET', '/slots', { doctorId: 'd1', date: today }, undefined],
      ['POST', '/appointments', {}, { doctorId: 'd1', start: SLOT, phone: PATIENT }],
    ]);
    expect(seen.map((s) => s.auth)).toEqual(Array(4).fill(`Bearer ${SECRET}`));

    const transcript = await transcriptOf(t.tenantId, item.id);
    expect(transcript[0]).toEqual(['agent', 'Sunrise Clinic, Ada speaking. How can I help?']);
    expect(transcript).toContainEqual(['agent', 'Thank you, Ada Lovelace. I have found your record.']);
    expect(transcript).toContainEqual([
      'agent',
      `Your appointment with Dr. Rivera at ${SLOT} is booked. Your reference is apt-42.`,
    ]);
    // The secret reaches no log line.
    for (const proc of Object.values(sys.services)) expect(proc.output()).not.toContain(SECRET);
  });

  it('goes on without a step that fails, and names it in the summary; a refused validation ends the booking', async () => {
    const t = await clinic({
      customApiBaseUrl: `${apiBase}/ok`,
      customApiSecret: SECRET,
      customApiTimeoutMs: 500,
      validateHookEnabled: true,
      slotsEnabled: true,
      bookingEnabled: true,
    });
    const patch = async (prefix: string) =>
      expect(
        (await api(t.key, `/inbound-agents/${t.agentId}`, { customApiBaseUrl: `${apiBase}/${prefix}` }, 'PATCH'))
          .status,
      ).toBe(200);

    // Global scope: the first synced doctor's slots.
    const booked = await ring(t);
    expect(booked.summary).toBe(`Appointment booked with Dr. Rivera at ${SLOT} (appointment apt-42).`);

    await patch('slow');
    const slow = await ring(t);
    expect(slow).toMatchObject({
      status: 'completed',
      agentId: t.agentId,
      hasTranscript: true,
      billingStatus: 'charged',
    });
    expect(slow.summary).toMatch(
      /^The caller asked for an appointment; none was booked: no slot was offered\. Failed: crm_lookup \(.*within 500 ms\); validate \(.*\); slots \(.*\)\.$/,
    );

    await patch('redirect');
    const redirected = await ring(t);
    expect(redirected.summary).toContain('Failed: crm_lookup (the custom API address is not allowed');

    await patch('big');
    const big = await ring(t);
    expect(big.summary).toMatch(
      /^The caller asked for an appointment; none was booked: no slot was offered\. Failed: crm_lookup \(.*larger than.*\); validate \(.*\); slots \(.*\)\.$/,
    );

    await patch('broken');
    const broken = await ring(t);
    expect(broken.summary).toMatch(
      /none was booked: no slot was offered\. Failed: validate \(the custom API's answer to POST \/validate is not JSON\); slots \(the custom API's answer to GET \/slots.* is not JSON\)\.$/,
    );

    await patch('refuse');
    const refused = await ring(t);
    expect(refused.summary).toBe(
      "The caller asked for an appointment; the custom API's validation refused it (the insurance has lapsed).",
    );
    expect(
      (await transcriptOf(t.tenantId, refused.id)).some(([, text]) => text!.includes('the insurance has lapsed')),
    ).toBe(true);

    // Every call was billed once.
    const ledger = await api(t.key, '/credits/transactions?type=call_deduction&limit=100');
    const charged = ledger.body.transactions.map((r: Json) => r.callId ?? r.reference);
    expect(charged).toHaveLength(6);
    expect(new Set(charged).size).toBe(6);
  });

  it('without a custom API the agent takes a message; deactivated, the default answering takes the next call', async () => {
    const t = await clinic({});
    const noted = await ring(t, '+14155550177');
    expect(noted).toMatchObject({
      agentId: t.agentId,
      agentName: 'Front desk',
      hasTranscript: true,
      summary: 'The caller asked for an appointment; the request was noted (the agent has no custom API).',
    });

    expect((await api(t.key, `/inbound-agents/${t.agentId}/activate`, { activate: false })).status).toBe(200);
    const fallback = await ring(t, '+14155550177');
    expect(fallback).toMatchObject({ agentId: null, agentName: null, status: 'completed', billingStatus: 'charged' });
    expect(fallback.summary).not.toContain('request was noted (the agent');
  });

  it('two calls at once both reach the agent; a deactivation mid-call lets the call end and bills it once', async () => {
    const t = await clinic({ customApiBaseUrl: `${apiBase}/slow`, customApiTimeoutMs: 1_500, slotsEnabled: true });
    const [a, b] = await Promise.all([ring(t), ring(t, '+14155550188')]);
    expect([a.agentId, b.agentId]).toEqual([t.agentId, t.agentId]);

    const sim = await admin(`/tenants/${t.tenantId}/simulate/inbound-call`, {
      toNumber: t.phoneNumber,
      fromNumber: PATIENT,
      durationSeconds: 30,
    });
    await new Promise((r) => setTimeout(r, 300)); // the agent is waiting on the custom API
    expect((await api(t.key, `/inbound-agents/${t.agentId}/activate`, { activate: false })).status).toBe(200);
    const ended = await eventually('the call billed', () => api(t.key, '/calls?direction=inbound&limit=100'), 30_000, {
      done: (r) => r.body.calls?.find((c: Json) => c.id === sim.body.callId)?.billingStatus === 'charged',
      intervalMs: 100,
    });
    expect(ended.body.calls.find((c: Json) => c.id === sim.body.callId)).toMatchObject({
      agentId: t.agentId,
      status: 'completed',
      hasTranscript: true,
    });
    const rows = (await api(t.key, '/credits/transactions?type=call_deduction&limit=100')).body.transactions.filter(
      (r: Json) => JSON.stringify(r).includes(sim.body.callId),
    );
    expect(rows).toHaveLength(1);
  });
});
