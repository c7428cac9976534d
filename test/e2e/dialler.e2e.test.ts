import { randomBytes } from 'node:crypto';
import mongoose from 'mongoose';
import { call, startSystem, tenantWithKey, type CallResult, type System } from '../harness/system';
import { eventually } from '../harness/wait';

// The dialler is shared by every tenant and fair to each (issue 21 §3): one tenant's backlog on
// few lines never delays another tenant's calls, and a cancelled contact's waiting dial is dropped
// at once. Calls run in real time here (no speed-up), so a tenant's one line stays busy.
describe('the dialler, shared by every tenant', () => {
  let sys: System;
  let gw: string;
  let leadsDb: mongoose.Connection;
  const scopes = ['calls:read', 'leads:read', 'leads:write', 'credits:read'];

  beforeAll(async () => {
    // The dispatcher's safety-net pass is a minute away: every dial here is started by a wake-up.
    sys = await startSystem({
      serviceEnv: {
        leads: { CALLING_WINDOW_DEFAULT: 'always', SCHEDULER_INTERVAL_MS: '200' },
        telephony: { DISPATCH_INTERVAL_MS: '60000' },
      },
    });
    gw = sys.gateways[0]!.url;
    leadsDb = await mongoose
      .createConnection(sys.env.MONGO_URL!, { dbName: sys.gatewayDb.replace(/^gateway_/, 'leads_') })
      .asPromise();
  });
  afterAll(async () => {
    await leadsDb?.close();
    await sys?.stop();
  });

  const admin = (path: string, body?: unknown, method?: string) =>
    call(`${gw}/admin/v1${path}`, { admin: true, ...(body !== undefined && { body }), ...(method && { method }) });
  const api = (key: string, path: string, body?: unknown, method?: string) =>
    call(`${gw}/api/v1${path}`, { key, ...(body !== undefined && { body }), ...(method && { method }) });
  async function tenant(lines?: number) {
    const t = await tenantWithKey(gw, { scopes, rateLimitPerSecond: 100_000 });
    expect((await admin(`/tenants/${t.tenantId}/credits`, { amount: 1_000_000 })).status).toBe(201);
    if (lines !== undefined)
      expect((await admin(`/tenants/${t.tenantId}/concurrency`, { maxConcurrentCalls: lines }, 'PUT')).status).toBe(
        200,
      );
    const c = await admin(`/tenants/${t.tenantId}/campaigns`, {
      name: `c ${randomBytes(2).toString('hex')}`,
      maxCallSeconds: 300,
    });
    expect(c.status).toBe(201);
    expect(
      (await admin(`/tenants/${t.tenantId}/campaigns/${c.body.campaign.id}/start`, undefined, 'POST')).status,
    ).toBe(200);
    return { ...t, campaignId: c.body.campaign.id as string };
  }
  let next = 0;
  /** A distinct number whose last four digits (1000–9999) make the simulator answer and talk 15–180 s. */
  const phone = (n: number) => `+1415${200 + Math.floor(n / 9000)}${1000 + (n % 9000)}`;
  /** Leads with distinct numbers (or these), a few at a time. */
  async function leads(t: { key: string; campaignId: string }, count: number, phones?: string[]): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < count; i += 25) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(25, count - i) }, (_, j) =>
          api(t.key, '/leads', {
            campaignId: t.campaignId,
            phone: phones?.[i + j] ?? phone(next++),
            name: 'Ada',
            channel: 'call',
            consent: {
              outboundCall: true,
              capturedAt: new Date(Date.now() - 60_000).toISOString(),
              source: 'web form',
            },
          }),
        ),
      );
      for (const r of batch) {
        expect(r.status).toBe(202);
        ids.push(r.body.contactId as string);
      }
    }
    return ids;
  }
  /** The tenant's contacts whose dial waits (queued: not yet claimed for a line), as the API lists them. */
  const waiting = async (t: { key: string; campaignId: string }): Promise<string[]> =>
    (
      (await api(t.key, `/campaigns/${t.campaignId}/contacts?limit=100`)).body.contacts as {
        id: string;
        status: string;
      }[]
    )
      .filter((c) => c.status === 'queued')
      .map((c) => c.id);

  it("dials another tenant's leads at once while one tenant's backlog waits for its single line", async () => {
    const busy = await tenant(1);
    await leads(busy, 1_100);
    // The busy tenant's backlog is announced to telephony (nothing of it left in leads' outbox) and
    // its one line taken: the other tenant's requests come behind the whole backlog.
    await eventually('the backlog announced', () => leadsDb.collection('outbox').countDocuments({}), 60_000, {
      done: (n: number) => n === 0,
      intervalMs: 250,
    });
    await eventually("the busy tenant's line taken", () => api(busy.key, '/calls/active'), 60_000, {
      done: (r: CallResult) => r.status === 200 && r.body.calls.length === 1,
      intervalMs: 250,
    });

    const other = await tenant();
    const contacts = await leads(other, 5);
    await eventually("the other tenant's five leads dialled", () => api(other.key, '/calls?limit=25'), 20_000, {
      done: (r: CallResult) =>
        r.status === 200 && r.body.calls.length === 5 && r.body.calls.every((c: any) => c.status !== 'queued'),
      intervalMs: 250,
    });
    const calls = (await api(other.key, '/calls?limit=25')).body.calls as { contactId: string }[];
    expect(new Set(calls.map((c) => c.contactId))).toEqual(new Set(contacts));
    // And the busy tenant never has more than its one line.
    expect((await api(busy.key, '/calls/active')).body.calls.length).toBeLessThanOrEqual(1);
  }, 120_000);

  it('dials the next waiting lead as soon as a line is freed', async () => {
    const t = await tenant(1);
    // Numbers ending 0001 ring out unanswered: each call holds the one line for its 3 s of ringing.
    await leads(t, 3, ['+14153100001', '+14153110001', '+14153120001']);
    await eventually(
      'the three leads dialled one after another on the one line',
      () => api(t.key, '/calls?limit=25'),
      30_000,
      {
        done: (r: CallResult) =>
          r.status === 200 && r.body.calls.length === 3 && r.body.calls.every((c: any) => c.status === 'no_answer'),
        intervalMs: 250,
      },
    );
  }, 60_000);

  it('dials a waiting backlog as soon as its package is raised', async () => {
    const t = await tenant(1);
    await leads(t, 3);
    await eventually('one lead dialled, two waiting for the line', () => waiting(t), 20_000, {
      done: (w: string[]) => w.length === 2,
      intervalMs: 250,
    });
    expect((await admin(`/tenants/${t.tenantId}/concurrency`, { maxConcurrentCalls: 3 }, 'PUT')).status).toBe(200);
    await eventually('the waiting two dialled on the new lines', () => waiting(t), 10_000, {
      done: (w: string[]) => w.length === 0,
      intervalMs: 250,
    });
    expect((await api(t.key, '/calls/active')).body.calls.length).toBe(3);
  }, 60_000);

  it('never dials a contact cancelled while its dial waits for a line', async () => {
    const t = await tenant(1);
    // Numbers ending 0004 reach voicemail: 20 s each, so the one line frees within the test.
    const both = await leads(t, 2, ['+14153200004', '+14153210004']);
    // One is dialled onto the tenant's one line; the other waits for it (either may come first).
    const [cancelled] = await eventually('one lead dialled, the other waiting for the line', () => waiting(t), 20_000, {
      done: (w: string[]) => w.length === 1,
      intervalMs: 250,
    });
    expect(both).toContain(cancelled);
    expect((await api(t.key, `/contacts/${cancelled}/cancel`, undefined, 'POST')).status).toBe(200);
    // The line frees when the first call ends; a pass then finds nothing of the cancelled contact's to dial.
    await eventually('the first call ended', () => api(t.key, '/calls/active'), 45_000, {
      done: (r: CallResult) => r.status === 200 && r.body.calls.length === 0,
      intervalMs: 250,
    });
    await new Promise((r) => setTimeout(r, 2_000));
    expect((await api(t.key, `/contacts/${cancelled}/calls`)).body.calls).toEqual([]);
    expect((await api(t.key, `/contacts/${cancelled}`)).body.contact.status).toBe('cancelled');
  }, 90_000);
});
