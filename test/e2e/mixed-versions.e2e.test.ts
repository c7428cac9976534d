import { randomBytes } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { loadManifest } from '@voiceapi/local-infra';
import { Receiver } from '../../services/webhooks/test/receiver';
import { SCOPES } from '../../gateway/src/auth/scopes';
import { readRecord } from '../tools/contracts';
import { ROOT } from '../harness/processes';
import { releaseBuild } from '../harness/release-build';
import { call, startSystem, tenantWithKey, type CallResult, type System } from '../harness/system';
import { eventually } from '../harness/wait';

// Mixed versions (docs/operations.md, "Releases"): the last recorded release's build of some
// processes beside this checkout's build of the others, on one store and one Kafka, through a
// tenant's whole flow: a lead becomes a call, its charge, a signed webhook; a knowledge document;
// an inbound call answered by its agent; the ledger balancing. Each process has a number 0–7
// (manifest order); for each bit of it, one phase runs the processes with the bit set old and
// another those with it clear, so every two processes (every gRPC caller and callee, every event
// producer and consumer) meet once with the first old and the second new, and once the other way.
// The first phase runs the release alone and the last this checkout alone. Every phase makes its
// own campaign, company, number, agent, endpoint and document, and reads back what every earlier
// phase wrote: data written by the old release is read by the new one.

type Json = Record<string, any>;
const names = loadManifest().processes.map((p) => p.name);

/** Which build each process runs in each phase: `old` (its last release) or this checkout. */
function phases(): { name: string; old: Set<string> }[] {
  const bits = Math.ceil(Math.log2(names.length));
  const out = [{ name: 'every process at its release', old: new Set(names) }];
  for (let b = 0; b < bits; b++) {
    const set = new Set(names.filter((_, i) => (i >> b) & 1));
    const clear = new Set(names.filter((n) => !set.has(n)));
    out.push(
      { name: `released: ${[...set].join(', ')}`, old: set },
      { name: `released: ${[...clear].join(', ')}`, old: clear },
    );
  }
  out.push({ name: 'every process at this checkout', old: new Set() });
  return out;
}

describe('the last release beside this checkout', () => {
  const record = readRecord();
  const receiver = new Receiver();
  const released: Record<string, string> = {};
  let sys: System;
  let gw: string;
  jest.setTimeout(20 * 60_000);

  beforeAll(async () => {
    // One build per release commit (each process may have been released from another one).
    const roots = new Map<string, string>();
    for (const name of names) {
      // A process never released yet has no old build: it runs at this checkout in every phase.
      const commit = record.services[name]?.commit;
      if (!commit) continue;
      if (!roots.has(commit)) roots.set(commit, releaseBuild(commit));
      released[name] = roots.get(commit)!;
    }
    await receiver.start();
    sys = await startSystem({
      builds: { ...released },
      serviceEnv: {
        telephony: { CARRIER_SIMULATOR_SPEEDUP: '200' },
        leads: { CALLING_WINDOW_DEFAULT: 'always', SCHEDULER_INTERVAL_MS: '200' },
        webhooks: {
          OUTBOUND_ALLOWLIST: receiver.hostPort,
          WEBHOOK_RETRY_SCHEDULE: '0,300ms,1s',
          WEBHOOK_SWEEP_INTERVAL_MS: '200',
        },
        agents: { SCRIPT_WORKER_INTERVAL_MS: '200' },
      },
    });
    gw = sys.gateways[0]!.url;
  });
  afterAll(async () => {
    await sys?.stop();
    await receiver.stop();
  });

  const admin = (path: string, body?: unknown, method?: string) =>
    call(`${gw}/admin/v1${path}`, { admin: true, ...(body !== undefined && { body }), ...(method && { method }) });
  const api = (key: string, path: string, body?: unknown, method?: string) =>
    call(`${gw}/api/v1${path}`, { key, ...(body !== undefined && { body }), ...(method && { method }) });

  /** Restarts the processes whose build changes in this phase (the gateway at its address). */
  async function enter(old: Set<string>): Promise<void> {
    for (const name of names) {
      const want = old.has(name) ? released[name] : undefined;
      if (sys.builds[name] === want) continue;
      if (want) sys.builds[name] = want;
      else delete sys.builds[name];
      if (name === 'gateway') {
        const port = Number(new URL(gw).port);
        await sys.gateways.shift()!.proc.stop();
        await sys.startGateway({}, port);
      } else {
        await sys.services[name]!.stop();
        await sys.startService(name);
      }
    }
  }

  /** One tenant across every phase: what one phase wrote, the next reads. */
  let tenant: { tenantId: string; key: string } | undefined;
  /** What earlier phases made: every later phase reads it back. */
  const made = {
    calls: [] as string[],
    contacts: [] as string[],
    campaigns: [] as string[],
    documents: [] as string[],
    hooks: [] as string[],
  };

  /** What a tenant sets up, made anew in every phase so each write crosses that phase's builds. */
  async function furnish(t: { tenantId: string; key: string }) {
    expect((await admin(`/tenants/${t.tenantId}/credits`, { amount: 1_000 })).status).toBe(201);
    const hookPath = `/hooks/${randomBytes(4).toString('hex')}`;
    const hook = await admin(`/tenants/${t.tenantId}/webhooks`, { url: `${receiver.base}${hookPath}` });
    expect(hook.status).toBe(201);
    receiver.secrets.set(hookPath, [hook.body.webhook.secret]);
    const c = await admin(`/tenants/${t.tenantId}/campaigns`, {
      name: `mixed ${randomBytes(2).toString('hex')}`,
      maxCallSeconds: 300,
    });
    expect(
      (await admin(`/tenants/${t.tenantId}/campaigns/${c.body.campaign.id}/start`, undefined, 'POST')).status,
    ).toBe(200);
    const phoneNumber = `+1628557${1000 + Math.floor(Math.random() * 8999)}`;
    expect((await admin(`/tenants/${t.tenantId}/numbers`, { phoneNumber, countryIso: 'US' })).status).toBe(201);
    const company = await api(t.key, '/companies', { name: 'Sunrise Clinic', timezone: 'America/New_York' });
    expect(company.status).toBe(201);
    const agent = await api(t.key, '/inbound-agents', {
      name: 'Front desk',
      phoneNumber,
      companyId: company.body.company.id,
      greetingMessage: 'Sunrise Clinic, how can I help?',
    });
    expect(agent.status).toBe(201);
    made.campaigns.push(c.body.campaign.id as string);
    made.hooks.push(hookPath);
    return { hookPath, campaignId: c.body.campaign.id as string, phoneNumber, agentId: agent.body.agent.id as string };
  }

  /** What every phase proves, whichever builds run it. */
  async function flow(t: { tenantId: string; key: string }): Promise<void> {
    const p = await furnish(t);
    // An outbound call: lead (gateway → leads → billing), dial (telephony → leads, billing), its
    // charge (billing's events → telephony, webhooks) and the signed webhook at the tenant's server.
    const lead = await api(t.key, '/leads', {
      campaignId: p.campaignId,
      phone: `+1415${200 + Math.floor(Math.random() * 700)}${1000 + Math.floor(Math.random() * 8999)}`,
      name: 'Ada',
      channel: 'call',
      consent: { outboundCall: true, capturedAt: new Date(Date.now() - 60_000).toISOString(), source: 'web form' },
    });
    expect(lead.status).toBe(202);
    const contactId = lead.body.contactId as string;
    const outbound = await eventually(
      'the outbound call charged',
      async () => {
        const r: CallResult = await api(t.key, `/contacts/${contactId}/calls`);
        return r.body.calls?.find((c: Json) => c.billingStatus === 'charged');
      },
      60_000,
      { intervalMs: 200 },
    );
    const billed = await eventually(
      'its call.outbound.billed webhook, signed',
      async () =>
        receiver.at(p.hookPath).find((r) => {
          const hook = JSON.parse(r.body) as Json;
          return r.verifiedBy.length === 1 && hook.type === 'call.outbound.billed' && hook.data?.callId === outbound.id;
        }),
      60_000,
      { intervalMs: 200 },
    );
    expect((JSON.parse(billed.body) as Json).data).toMatchObject({
      callId: outbound.id,
      contactId,
      billingStatus: 'charged',
      creditsCharged: outbound.creditsCharged,
    });
    await eventually(
      'the contact completed',
      async () => (await api(t.key, `/contacts/${contactId}`)).body.contact?.status === 'completed',
      60_000,
      { intervalMs: 200 },
    );
    made.contacts.push(contactId);
    // A knowledge document (gateway → knowledge → billing); the phase's agent reads it and every
    // earlier phase's (agents → knowledge, companies) for its script before it answers a call.
    const form = new FormData();
    form.append(
      'file',
      new Blob([Buffer.from(`Opening hours are eight to six. Phase ${made.documents.length}.`)], {
        type: 'text/plain',
      }),
      'faq.txt',
    );
    const doc = await fetch(`${gw}/api/v1/knowledge-bases/documents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.key}` },
      body: form,
    });
    expect(doc.status).toBe(201);
    made.documents.push(((await doc.json()) as Json).document.fileId as string);
    const linked = await api(
      t.key,
      `/inbound-agents/${p.agentId}`,
      { selectedKnowledgebases: made.documents },
      'PATCH',
    );
    expect([linked.status, linked.body.agent?.selectedKnowledgebases?.length]).toEqual([200, made.documents.length]);
    expect(
      (await call(`${gw}/api/v1/inbound-agents/${p.agentId}/generate-script`, { key: t.key, method: 'POST' })).status,
    ).toBe(202);
    await eventually(
      'the script ready',
      async () => (await api(t.key, `/inbound-agents/${p.agentId}`)).body.agent?.inboundScriptStatus === 'ready',
      60_000,
      { intervalMs: 200 },
    );
    expect((await api(t.key, `/inbound-agents/${p.agentId}/activate`, { activate: true })).status).toBe(200);
    // An inbound call answered by its agent (telephony → agents) and charged.
    const ring = await admin(`/tenants/${t.tenantId}/simulate/inbound-call`, {
      toNumber: p.phoneNumber,
      fromNumber: '+14155550142',
      durationSeconds: 60,
    });
    expect(ring.status).toBe(202);
    const inbound = await eventually(
      'the inbound call charged',
      async () => {
        const r = await api(t.key, '/calls?direction=inbound&limit=100');
        return r.body.calls?.find((c: Json) => c.id === ring.body.callId && c.billingStatus === 'charged');
      },
      60_000,
      { intervalMs: 200 },
    );
    expect(inbound).toMatchObject({ agentId: p.agentId, status: 'completed', hasTranscript: true });
    made.calls.push(outbound.id as string, inbound.id as string);

    // What every phase so far wrote, read back by this phase's builds: the call feed, each contact,
    // the analytics rollups (one outbound call per phase's campaign), and the ledger, which balances.
    const feed = await api(t.key, '/calls?limit=100');
    expect(feed.body.calls.map((c: Json) => c.id)).toEqual(expect.arrayContaining(made.calls));
    for (const id of made.contacts)
      expect((await api(t.key, `/contacts/${id}`)).body.contact).toMatchObject({ id, status: 'completed' });
    await eventually(
      'every campaign so far in the analytics',
      async () => {
        const r = await api(t.key, '/analytics/calls?groupBy=campaign&direction=outbound');
        const byCampaign = new Map((r.body.buckets ?? []).map((b: Json) => [b.key, b.calls]));
        return made.campaigns.every((c) => byCampaign.get(c) === 1);
      },
      60_000,
      { intervalMs: 200 },
    );
    const credits = await api(t.key, '/credits');
    const rows: Json[] = [];
    for (let page = 1; ; page++) {
      const r = await api(t.key, `/credits/transactions?limit=100&page=${page}`);
      rows.push(...r.body.transactions);
      if (!r.body.pagination.hasMore) break;
    }
    expect(credits.body.balance).toBe(rows.reduce((sum, r) => sum + (r.amount as number), 0));
    expect(rows.filter((r) => r.type === 'call_deduction').map((r) => r.callId)).toEqual(
      expect.arrayContaining(made.calls),
    );
  }

  it.each(phases().map((p) => [p.name, p.old] as const))('%s', async (_name, old) => {
    await enter(old);
    tenant ??= await tenantWithKey(gw, { scopes: [...SCOPES], rateLimitPerSecond: 10_000 });
    await flow(tenant);
    // Each process runs from the build it was meant to (its working folder is that checkout).
    const pids = {
      ...Object.fromEntries(Object.entries(sys.services).map(([n, p]) => [n, p.child.pid])),
      gateway: sys.gateways[0]!.proc.child.pid,
    };
    const runsFrom = Object.fromEntries(Object.entries(pids).map(([n, pid]) => [n, realpathSync(`/proc/${pid}/cwd`)]));
    expect(runsFrom).toEqual(
      Object.fromEntries(names.map((n) => [n, realpathSync(old.has(n) && released[n] ? released[n] : ROOT)])),
    );
  });
});
