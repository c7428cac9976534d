import { call, startSystem, tenantWithKey, type System } from '../harness/system';
import { openSse, type SseClient, type SseEvent } from '../harness/sse';

// GET /calls/stream through the real gateway and telephony (../shared/guide/api-decisions.md
// "Following calls live"): each call's changes in order with the call as GET /calls shows it,
// resume by Last-Event-ID missing nothing and repeating nothing, filters, tenant isolation, the
// cap per key, keep-alive comments, a gateway that stops ending its streams cleanly while another
// replica goes on from the cursor. A client that reads nothing is dropped: call-stream.test.ts.

const SPEEDUP = 200;
const CHANGES = ['call.started', 'call.ringing', 'call.answered', 'call.ended', 'call.billed'];

describe('following calls live through the gateway', () => {
  let sys: System;
  let gw: string;
  let nextLine = 0;
  /** Numbers the simulator answers and ends quickly (…0000: completed after 42 s, 0.2 s here). */
  const answered = () => `+1415${300 + (nextLine++ % 600)}0000`;

  beforeAll(async () => {
    sys = await startSystem({
      serviceEnv: {
        telephony: { CARRIER_SIMULATOR_SPEEDUP: String(SPEEDUP) },
        leads: { CALLING_WINDOW_DEFAULT: 'always' },
      },
      gatewayEnv: { CALL_STREAM_KEEPALIVE_MS: '1000' },
    });
    gw = sys.gateways[0]!.url;
  });
  afterAll(() => sys.stop());

  const admin = (p: string, body?: unknown, method?: string) =>
    call(`${gw}/admin/v1${p}`, { admin: true, ...(body !== undefined && { body }), ...(method && { method }) });
  async function tenant() {
    const t = await tenantWithKey(gw, {
      scopes: ['calls:read', 'leads:write', 'leads:read'],
      rateLimitPerSecond: 10_000,
    });
    expect((await admin(`/tenants/${t.tenantId}/credits`, { amount: 1_000_000 })).status).toBe(201);
    expect((await admin(`/tenants/${t.tenantId}/concurrency`, { maxConcurrentCalls: 50 }, 'PUT')).status).toBe(200);
    const c = await admin(`/tenants/${t.tenantId}/campaigns`, { name: 'live', maxCallSeconds: 120 });
    expect(
      (await admin(`/tenants/${t.tenantId}/campaigns/${c.body.campaign.id}/start`, undefined, 'POST')).status,
    ).toBe(200);
    return { ...t, campaignId: c.body.campaign.id as string };
  }
  const lead = async (t: { key: string; campaignId: string }, phone = answered()) => {
    const res = await call(`${gw}/api/v1/leads`, {
      key: t.key,
      body: { campaignId: t.campaignId, phone, channel: 'call', consent: { outboundCall: true } },
    });
    expect(res.status).toBe(202);
    return res.body.contactId as string;
  };
  const stream = (key: string, query = '', lastEventId?: string, base = gw) =>
    openSse(`${base}/api/v1/calls/stream${query}`, { key, ...(lastEventId !== undefined && { lastEventId }) });
  /** The changes of one call, in the order received, once it is billed (keep-alive comments, 1 s here, end each wait). */
  async function changesOf(s: SseClient, contactId: string): Promise<SseEvent[]> {
    const mine = () => s.events.filter((e) => e.data?.contactId === contactId);
    await s.next(() => mine().some((e) => e.event === 'call.billed'), 60_000);
    return mine();
  }

  it('sends each change of a call in order, with the call as GET /calls shows it after the change', async () => {
    const t = await tenant();
    const s = await stream(t.key);
    expect(s.status).toBe(200);
    expect(s.headers.get('content-type')).toMatch(/^text\/event-stream/);
    const contactId = await lead(t);
    const changes = await changesOf(s, contactId);
    s.close();
    expect(changes.map((e) => e.event)).toEqual(CHANGES);
    // An outbound call's row is written ringing once its hold is placed (decision 0145), as an inbound call's is.
    expect(changes.map((e) => e.data.status)).toEqual(['ringing', 'ringing', 'in_progress', 'completed', 'completed']);
    expect(changes.at(-1)!.data).toMatchObject({
      direction: 'outbound',
      billingStatus: 'charged',
      campaignId: t.campaignId,
    });
    expect(changes.at(-1)!.data).not.toHaveProperty('sandbox');
    // Cursors are distinct and the data is GET /calls's row.
    expect(new Set(changes.map((e) => e.id)).size).toBe(5);
    const listed = await call(`${gw}/api/v1/calls?campaignId=${t.campaignId}`, { key: t.key });
    expect(listed.body.calls[0]).toEqual(changes.at(-1)!.data);
  });

  it('resumes after Last-Event-ID with what was missed, nothing repeated, on any replica', async () => {
    const t = await tenant();
    const s = await stream(t.key);
    const first = await lead(t);
    const seen = await changesOf(s, first);
    s.close();
    // While no stream is open: two more calls.
    const later = [await lead(t), await lead(t)];
    const other = await sys.startGateway();
    const again = await stream(t.key, '', seen[1]!.id, other.url);
    const got: SseEvent[] = [];
    for (const id of later) got.push(...(await changesOf(again, id)));
    // What followed call.ringing of the first call: its last three changes, then the two calls.
    const firstRest = again.events.filter((e) => e.data?.contactId === first).map((e) => e.event);
    again.close();
    expect(firstRest).toEqual(['call.answered', 'call.ended', 'call.billed']);
    expect(got.map((e) => e.event)).toEqual([...CHANGES, ...CHANGES]);
    const ids = again.events.filter((e) => e.id).map((e) => e.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(ids).not.toContain(seen[0]!.id);
    expect(ids).not.toContain(seen[1]!.id);
    await other.proc.stop();
  });

  it("never carries another tenant's call, and filters by direction and campaign", async () => {
    const a = await tenant();
    const b = await tenant();
    const sb = await stream(b.key);
    const inbound = await stream(a.key, '?direction=inbound');
    const otherCampaign = await stream(a.key, '?campaignId=0123456789abcdef01234567');
    const byCampaign = await stream(a.key, `?campaignId=${a.campaignId}&direction=outbound`);
    const contactId = await lead(a);
    expect((await changesOf(byCampaign, contactId)).length).toBe(5);
    // The same moment on the other streams: only keep-alive comments (1 s here).
    await sb.next((e) => e.event === 'comment', 5_000);
    for (const s of [sb, inbound, otherCampaign]) {
      expect(s.events.filter((e) => e.event !== 'comment')).toEqual([]);
      s.close();
    }
    byCampaign.close();
  });

  it('refuses a Last-Event-ID that is not a cursor (400), and resets one older than a day', async () => {
    const t = await tenant();
    for (const bad of ['nonsense', '12', '1-zzzzzzzzzzz', '99999999-' + Date.now().toString(36)]) {
      const s = await stream(t.key, '', bad);
      expect({ bad, status: s.status, reasonCode: s.body?.reasonCode, path: s.body?.details?.[0]?.path }).toEqual({
        bad,
        status: 400,
        reasonCode: 'validation_error',
        path: 'header.Last-Event-ID',
      });
    }
    const old = await stream(t.key, '', `1-${(Date.now() - 25 * 3600_000).toString(36)}`);
    expect(old.status).toBe(200);
    const reset = await old.next();
    expect(reset.event).toBe('stream.reset');
    expect(reset.id).toMatch(/^\d+-[0-9a-z]+$/);
    old.close();
    const badQuery = await stream(t.key, '?direction=sideways');
    expect(badQuery.status).toBe(400);
  });

  it('caps open streams at 5 per key (a sixth is 429 rate_limited) and frees a place when one closes', async () => {
    const t = await tenant();
    const open: SseClient[] = [];
    for (let i = 0; i < 5; i++) open.push(await stream(t.key));
    expect(open.map((s) => s.status)).toEqual([200, 200, 200, 200, 200]);
    const sixth = await stream(t.key);
    expect({ status: sixth.status, reasonCode: sixth.body?.reasonCode }).toEqual({
      status: 429,
      reasonCode: 'rate_limited',
    });
    open.pop()!.close();
    let again: SseClient | undefined;
    for (let i = 0; i < 50 && again?.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      again = await stream(t.key);
    }
    expect(again!.status).toBe(200);
    for (const s of [...open, again!]) s.close();
  });

  it('ends its streams cleanly when the gateway stops: the client goes on from its cursor elsewhere', async () => {
    const t = await tenant();
    const doomed = await sys.startGateway();
    const s = await stream(t.key, '', undefined, doomed.url);
    const contactId = await lead(t);
    const before = await s.next((e) => e.data?.contactId === contactId && e.event === 'call.started', 30_000);
    const stopping = doomed.proc.stop();
    expect(await s.ended).toBe(true);
    await stopping;
    const resumed = await stream(t.key, '', before.id);
    const rest: string[] = [];
    while (rest.at(-1) !== 'call.billed')
      rest.push((await resumed.next((e) => e.data?.contactId === contactId, 60_000)).event);
    resumed.close();
    // Whatever the first stream got after call.started, the resumed one starts right after it.
    expect(rest).toEqual(CHANGES.slice(1));
  });
});
