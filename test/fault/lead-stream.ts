// Over 300 lines because the fault scenario's steps share one started system and one stream of leads.
import mongoose from 'mongoose';
import { walletProblems } from '../../services/billing/test/invariants';
import { Receiver } from '../../services/webhooks/test/receiver';
import { call, startSystem, tenantWithKey, type CallResult, type System } from '../harness/system';
import { eventually, sleep } from '../harness/wait';

// A tenant pushing live call leads steadily through the gateway while a fault suite kills services
// (availability.test.ts, two-replicas.test.ts), what the posts say, and the invariants afterwards:
// every accepted lead called once, charged once and announced to the tenant's webhook endpoint at
// least once, and a ledger that balances.

/** How much faster than real time the carrier simulator runs the calls. */
export const SPEEDUP = 60;

/** The tenant's webhook endpoint (start it before the system: webhooks may call only it). */
export const startStreamReceiver = () => new Receiver().start();

/** Settings of the services for the stream: fast calls, calls at any hour, deliveries to the receiver retried quickly. */
export const streamServiceEnv = (receiver: Receiver) => ({
  telephony: { CARRIER_SIMULATOR_SPEEDUP: String(SPEEDUP) },
  leads: { CALLING_WINDOW_DEFAULT: 'always' },
  webhooks: {
    OUTBOUND_ALLOWLIST: receiver.hostPort,
    WEBHOOK_RETRY_SCHEDULE: '0,300ms,1s,2s',
    WEBHOOK_SWEEP_INTERVAL_MS: '500',
  },
});

export interface StreamTenant {
  tenantId: string;
  key: string;
  campaignId: string;
  /** The receiver's path of the tenant's endpoint (`call.outbound.billed` only). */
  hookPath: string;
}

export interface Post {
  sentAt: number;
  answeredAt: number;
  status: number;
  reasonCode?: string;
  contactId?: string;
  /** Why no answer came (status 0): the connection error's code and message, e.g. `UND_ERR_SOCKET other side closed`. */
  failure?: string;
}

/** A live tenant with credit, room for 100 concurrent calls, a running campaign and a webhook endpoint for billed calls. */
export async function streamTenant(gw: string, receiver: Receiver): Promise<StreamTenant> {
  const t = await tenantWithKey(gw, {
    scopes: ['leads:read', 'leads:write', 'calls:read', 'credits:read'],
    rateLimitPerSecond: 100_000,
  });
  const admin = (path: string, body?: unknown, method?: string) =>
    call(`${gw}/admin/v1${path}`, { admin: true, ...(body !== undefined && { body }), ...(method && { method }) });
  expect((await admin(`/tenants/${t.tenantId}/credits`, { amount: 10_000_000 })).status).toBe(201);
  expect((await admin(`/tenants/${t.tenantId}/concurrency`, { maxConcurrentCalls: 100 }, 'PUT')).status).toBe(200);
  const c = await admin(`/tenants/${t.tenantId}/campaigns`, { name: 'lead stream', maxCallSeconds: 120 });
  expect(c.status).toBe(201);
  expect((await admin(`/tenants/${t.tenantId}/campaigns/${c.body.campaign.id}/start`, undefined, 'POST')).status).toBe(
    200,
  );
  const hookPath = `/hooks/${t.tenantId}`;
  const hook = await admin(`/tenants/${t.tenantId}/webhooks`, {
    url: `${receiver.base}${hookPath}`,
    events: ['call.outbound.billed'],
  });
  expect(hook.status).toBe(201);
  receiver.secrets.set(hookPath, [hook.body.webhook.secret]);
  return { ...t, campaignId: c.body.campaign.id as string, hookPath };
}

/** A running system with a streaming tenant and its webhook receiver, as both fault suites start it. */
export interface LeadStream {
  sys: System;
  gw: string;
  tenant: StreamTenant;
  receiver: Receiver;
  stop(): Promise<void>;
}

/** Starts the receiver, the system (with `replicas` when given) and the tenant. */
export async function startLeadStream(replicas?: Record<string, number>): Promise<LeadStream> {
  const receiver = await startStreamReceiver();
  let sys: System | undefined;
  const stop = async () => {
    await sys?.stop();
    await receiver.stop();
  };
  try {
    sys = await startSystem({ serviceEnv: streamServiceEnv(receiver), ...(replicas && { replicas }) });
    const gw = sys.gateways[0]!.url;
    return { sys, gw, receiver, tenant: await streamTenant(gw, receiver), stop };
  } catch (err) {
    // The suite never gets the stream to stop: stop what started, so nothing outlives it.
    await stop();
    throw err;
  }
}

let phones = 0;
/** A distinct number whose last four digits (1000–9999) make the simulator answer and talk 15–180 s (0.25–3 s here). */
const phone = (n: number) => `+1415${200 + Math.floor(n / 9000)}${1000 + (n % 9000)}`;

/** Posts live call leads back to back from `workers` loops until `stop()` says so. */
export function pushLeads(
  gw: string,
  tenant: StreamTenant,
  workers: number,
  paceMs: number,
): { posts: Post[]; stop: () => Promise<void> } {
  const posts: Post[] = [];
  let stopping = false;
  const loops = Array.from({ length: workers }, async () => {
    while (!stopping) {
      const sentAt = Date.now();
      const body = {
        campaignId: tenant.campaignId,
        phone: phone(phones++),
        name: 'Ada',
        channel: 'call',
        consent: { outboundCall: true, capturedAt: new Date(Date.now() - 60_000).toISOString(), source: 'web form' },
      };
      let res: CallResult;
      let failure: string | undefined;
      try {
        res = await call(`${gw}/api/v1/leads`, { key: tenant.key, body });
      } catch (err) {
        res = { status: 0, headers: new Headers(), body: undefined }; // the connection itself failed
        const cause = (err as { cause?: { code?: string; message?: string } }).cause;
        failure = `${cause?.code ?? ''} ${cause?.message ?? (err as Error).message}`.trim();
      }
      posts.push({
        sentAt,
        answeredAt: Date.now(),
        status: res.status,
        reasonCode: res.body?.reasonCode,
        contactId: res.body?.contactId,
        ...(failure !== undefined && { failure }),
      });
      await sleep(paceMs);
    }
  });
  return {
    posts,
    stop: async () => {
      stopping = true;
      await Promise.all(loops);
    },
  };
}

/** What the posts after `from` say: how many were accepted, the longest time without a 202, the slowest answer, and the refusals. */
export function summarize(posts: Post[], from: number) {
  const after = posts.filter((p) => p.sentAt >= from);
  const accepted = after.filter((p) => p.status === 202).length;
  let longestGap = 0;
  let last = from;
  for (const p of [...after].sort((a, b) => a.answeredAt - b.answeredAt)) {
    if (p.status !== 202) continue;
    longestGap = Math.max(longestGap, p.answeredAt - last);
    last = p.answeredAt;
  }
  const slowest = Math.max(0, ...after.map((p) => p.answeredAt - p.sentAt));
  return {
    posts: after.length,
    accepted,
    share: after.length === 0 ? 0 : accepted / after.length,
    longestGapMs: longestGap,
    slowestMs: slowest,
    refused: after.filter((p) => p.status !== 202),
  };
}

/** Where the services keep their data: the store's URL and each service's database. */
export interface StoreAccess {
  url: string;
  dbName(service: string): string;
}

/** The store of a system the harness started (each service's database carries the run's suffix). */
export const storeOf = (sys: System): StoreAccess => ({
  url: sys.env.MONGO_URL!,
  dbName: (service) => sys.gatewayDb.replace(/^gateway_/, `${service}_`),
});

/** A call as telephony stored it, with when billing charged it. */
export interface ChargedCall {
  id: string;
  contactId: string;
  endedAt: Date;
  creditsCharged: number;
  /** When the call's `call_deduction` entry was written. */
  chargedAt: Date;
}

/**
 * Waits until every accepted lead was called and billed, then checks: one call per lead (a lead
 * whose post was refused after leads wrote it may be called too, at most `refusedPosts` of them),
 * every call charged once, the ledger's call rows one per call, the balance what they say, the
 * wallet's chain intact, the contacts completed, and every call announced to the tenant's endpoint
 * (signed). Answers the calls with when each was charged.
 */
export async function expectCalledAndChargedOnce(
  store: StoreAccess,
  gw: string,
  tenant: StreamTenant,
  receiver: Receiver,
  accepted: readonly string[],
  refusedPosts: number,
): Promise<ChargedCall[]> {
  const api = (path: string) => call(`${gw}/api/v1${path}`, { key: tenant.key });
  const contact = async (id: string) => (await api(`/contacts/${id}`)).body.contact as { status: string };
  const db = (service: string) => mongoose.createConnection(store.url, { dbName: store.dbName(service) }).asPromise();
  const [telephonyDb, billingDb] = await Promise.all([db('telephony'), db('billing')]);
  try {
    const calls = telephonyDb.collection('calls');
    const ended = { tenantId: tenant.tenantId, endedAt: { $exists: true }, billingStatus: { $ne: 'pending' } };
    await eventually(
      'every accepted lead called and billed',
      async () => {
        const billed = new Set(
          (await calls.find(ended).project({ contactId: 1 }).toArray()).map((c) => c.contactId as string),
        );
        return accepted.every((id) => billed.has(id)) ? true : undefined;
      },
      300_000,
      {
        intervalMs: 250,
        retryErrors: true,
        detail: async () => ({
          accepted: accepted.length,
          done: await calls.countDocuments(ended),
          all: await calls.countDocuments({ tenantId: tenant.tenantId }),
        }),
      },
    );
    await eventually(
      'no call left unbilled',
      async () =>
        (await calls.countDocuments({ tenantId: tenant.tenantId, billingStatus: 'pending' })) === 0 ? true : undefined,
      60_000,
      { intervalMs: 250, retryErrors: true },
    );
    const all = await calls.find({ tenantId: tenant.tenantId }).toArray();
    // One call per lead: none dialled twice, none accepted left out.
    expect(new Set(all.map((c) => c.contactId)).size).toBe(all.length);
    const called = new Set(all.map((c) => c.contactId as string));
    expect(accepted.filter((id) => !called.has(id))).toEqual([]);
    expect(all.length - accepted.length).toBeLessThanOrEqual(refusedPosts);
    const odd = all.filter((c) => c.billingStatus !== 'charged');
    expect(
      odd.map((c) => ({
        id: c._id,
        status: c.status,
        endReason: c.endReason,
        billingStatus: c.billingStatus,
        creditsError: c.creditsError,
      })),
    ).toEqual([]);
    // Charged once each: the ledger's call rows are one per call and sum to what the calls say; the balance follows.
    const charged = all.reduce((n, c) => n + (c.creditsCharged as number), 0);
    expect((await api('/credits')).body).toMatchObject({ balance: 10_000_000 - charged, held: 0 });
    expect((await api('/credits/transactions?type=call_deduction&limit=1')).body.pagination.total).toBe(all.length);
    expect(await walletProblems(billingDb, tenant.tenantId)).toEqual([]);
    // The contacts follow their calls (leads hears of each end, after its own restarts too).
    const sample = accepted.filter((_, i) => i % 25 === 0);
    await eventually(
      'the contacts completed',
      async () => ((await Promise.all(sample.map(contact))).every((c) => c.status === 'completed') ? true : undefined),
      120_000,
      { intervalMs: 250, retryErrors: true },
    );
    // Announced at least once: each call's `call.outbound.billed` reached the endpoint, signed.
    const announced = () =>
      new Set(
        receiver
          .at(tenant.hookPath)
          .flatMap((r) =>
            r.verifiedBy.length > 0 ? [(JSON.parse(r.body) as { data: { callId: string } }).data.callId] : [],
          ),
      );
    await eventually(
      'every call announced to the webhook endpoint',
      async () => {
        const seen = announced();
        return all.every((c) => seen.has(String(c._id))) ? true : undefined;
      },
      120_000,
      { intervalMs: 250, retryErrors: true, detail: async () => ({ calls: all.length, announced: announced().size }) },
    );
    const entries = await billingDb
      .collection('wallet_entries')
      .find({ tenantId: tenant.tenantId, reference: { $in: all.map((c) => `call:${String(c._id)}`) } })
      .project({ reference: 1, createdAt: 1 })
      .toArray();
    const chargedAt = new Map(entries.map((e) => [e.reference as string, e.createdAt as Date]));
    return all.map((c) => ({
      id: String(c._id),
      contactId: c.contactId as string,
      endedAt: c.endedAt as Date,
      creditsCharged: c.creditsCharged as number,
      chargedAt: chargedAt.get(`call:${String(c._id)}`)!,
    }));
  } finally {
    await Promise.all([telephonyDb.close(), billingDb.close()]);
  }
}
