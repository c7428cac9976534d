import { randomBytes } from 'node:crypto';
import { call, startSystem, tenantWithKey, type CallResult, type System } from '../harness/system';

// Outbound through the real gateway and the real leads service (with billing behind it):
// campaigns, POST /leads, POST /events, contacts, event routes and omni templates for tenants;
// campaigns, templates, do-not-call lists and the message record for the operator
// (../shared/spec/tenant-api-spec.md "POST /api/v1/leads", "Events"; ../shared/guide/api-decisions.md
// "Errors", "Endpoint shapes", "Compliance", "Sandbox"; ../shared/guide/operator-api.md).
// The telephony service is left out here: a `call` lead's dial request waits on the leads stream,
// so a live call contact stays `queued` (or `scheduled`) for the whole suite (telephony's suite
// follows dials to their end).
//
// The suite is split by area into leads.*.e2e.test.ts (each starts its own system); this module
// holds what they share: constants, the system's start and stop, and the helpers.

// The issue asks for 10,000 concurrent POST /leads with one Idempotency-Key. The normal suite sends
// E2E_IDEMPOTENCY_BURST of them, 200 unless set (E2E_IDEMPOTENCY_BURST=10000 for the full burst).
export const BURST = Number(process.env.E2E_IDEMPOTENCY_BURST ?? 200);
if (!Number.isSafeInteger(BURST) || BURST < 2)
  throw new Error(`E2E_IDEMPOTENCY_BURST must be a whole number ≥ 2, not ${process.env.E2E_IDEMPOTENCY_BURST}`);

export const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
export const HEX_ID = /^[0-9a-f]{24}$/;
export const ALL_DAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
/** 00:00–24:00 every day: open at any hour, yet a window of local times (not `always`). */
export const OPEN_ALL_DAY = { start: '00:00', end: '24:00', days: [...ALL_DAYS] };
export const FOREIGN_ID = '0123456789abcdef01234567';

export type Json = Record<string, any>;

let sys: System;
/** The gateway's address, set by `useLeadsSystem`'s beforeAll (an import of it reads the current value). */
export let gw: string;
export const SCOPES = ['leads:read', 'leads:write', 'credits:read'];

/** Starts the system (without telephony) for the calling describe block, and stops it after. */
export function useLeadsSystem(): void {
  beforeAll(async () => {
    sys = await startSystem({ without: ['telephony'] });
    gw = sys.gateways[0]!.url;
  });
  afterAll(() => sys.stop());
}

// Every lead gets a number of its own (San Francisco, America/Los_Angeles): the platform's
// do-not-call list is shared by the file's tenants.
let nextLine = 1000;
/** The next line number of the file's run (the last four digits of a number no lead had). */
export const takeLine = () => nextLine++;
export const phone = () => `+1415555${String(takeLine()).padStart(4, '0')}`;

// ---- helpers: the operator API ----
// Generous limits: rate limiting has its own suite, this one sends bursts on purpose.
export const fresh = (mode: 'live' | 'sandbox' = 'live', scopes = SCOPES) =>
  tenantWithKey(gw, { mode, scopes, rateLimitPerSecond: 10_000 });
export const admin = (path: string, body?: unknown, method?: string) =>
  call(`${gw}/admin/v1${path}`, { admin: true, ...(body !== undefined && { body }), ...(method && { method }) });
export const sandboxKey = async (tenantId: string, scopes = SCOPES): Promise<string> => {
  const res = await admin(`/tenants/${tenantId}/api-keys`, {
    name: 'sandbox',
    mode: 'sandbox',
    scopes,
    rateLimitPerSecond: 10_000,
  });
  expect(res.status).toBe(201);
  expect(res.body.key).toMatch(/^sk_sandbox_/);
  return res.body.key;
};
export const createCampaign = (tenantId: string, body: Json) => admin(`/tenants/${tenantId}/campaigns`, body);
export const startCampaign = (tenantId: string, id: string) =>
  call(`${gw}/admin/v1/tenants/${tenantId}/campaigns/${id}/start`, { admin: true, method: 'POST' });
/** A running campaign open at any hour (maxCallSeconds 120: one call's hold is 4 credits). */
export async function running(tenantId: string, extra: Json = {}): Promise<Json> {
  const created = await createCampaign(tenantId, {
    name: `campaign ${randomBytes(2).toString('hex')}`,
    callingWindow: OPEN_ALL_DAY,
    maxCallSeconds: 120,
    ...extra,
  });
  expect(created.status).toBe(201);
  const started = await startCampaign(tenantId, created.body.campaign.id);
  expect(started.status).toBe(200);
  expect(started.body.campaign.status).toBe('running');
  return started.body.campaign;
}
export const topUp = async (tenantId: string, amount: number) => {
  const res = await admin(`/tenants/${tenantId}/credits`, { amount });
  expect(res.status).toBe(201);
  return res.body.balance as number;
};
export const template = async (tenantId: string, body: Json): Promise<Json> => {
  const res = await admin(`/tenants/${tenantId}/omni-templates`, body);
  expect(res.status).toBe(201);
  return res.body.template;
};
export const whatsappTemplate = (tenantId: string) =>
  template(tenantId, {
    channel: 'whatsapp',
    name: 'Appointment reminder',
    language: 'en',
    body: 'Hi {{1}}, your appointment is on {{2}}.',
  });
export const emailTemplate = (tenantId: string) =>
  template(tenantId, {
    channel: 'email',
    name: 'Welcome',
    language: 'en',
    subject: 'Welcome, {{first_name}}',
    body: 'Hello {{first_name}}, your code is {{code}}.',
  });
export const messages = (tenantId: string, qs = '') => admin(`/tenants/${tenantId}/messages${qs}`);
export const dncTenant = (tenantId: string, number: string) =>
  admin(`/tenants/${tenantId}/do-not-call`, { phone: number });
export const dncPlatform = (number: string) => admin('/do-not-call', { phone: number });

// ---- helpers: the tenant API ----
export const api = (
  key: string,
  path: string,
  opts: { method?: string; body?: unknown; raw?: string; headers?: Record<string, string> } = {},
) => call(`${gw}/api/v1${path}`, { key, ...opts });
export const lead = (key: string, body: unknown, headers?: Record<string, string>) =>
  api(key, '/leads', { body, ...(headers && { headers }) });
export const event = (key: string, body: unknown) => api(key, '/events', { body });
export const contact = (key: string, id: string) => api(key, `/contacts/${id}`);
export const consent = { outboundCall: true, capturedAt: '2026-01-20T14:03:00Z', source: 'web form /pricing' };
export const callLead = (campaignId: string, extra: Json = {}) => ({
  campaignId,
  phone: phone(),
  name: 'Ada Lovelace',
  channel: 'call',
  consent,
  ...extra,
});

/** The documented error body: `{ error, reasonCode, details? }` (and `missing` on 403 only). */
export function expectError(res: CallResult, status: number, reasonCode: string, what = '') {
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
export const paths = (res: CallResult): string[] => (res.body?.details ?? []).map((d: { path: string }) => d.path);

/** A date's weekday and wall-clock time in a zone. */
export function local(at: Date, timeZone: string): { weekday: string; time: string } {
  const parts = new Intl.DateTimeFormat('en-US', {
    timeZone,
    weekday: 'short',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    hourCycle: 'h23',
  }).formatToParts(at);
  const get = (t: string) => parts.find((p) => p.type === t)!.value;
  return {
    weekday: get('weekday').toLowerCase().slice(0, 3),
    time: `${get('hour')}:${get('minute')}:${get('second')}`,
  };
}
