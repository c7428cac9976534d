// Over 300 lines because the matrix, its claims and known differences stand beside the one flow every phase runs and the canary that must be refused.
import { randomBytes } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { loadManifest } from '@voiceapi/local-infra';
import { Receiver } from '../../services/webhooks/test/receiver';
import { SCOPES } from '../../services/gateway/src/auth/scopes';
import { readRecord } from '../../tools/contracts';
import { exchanges, fallbacksBetween, phaseProblems, unclaimed, type Claimed } from '../harness/exchanges';
import { startOtlpCollector, type OtlpCollector } from '../harness/otlp-collector';
import { freePort, ROOT } from '../harness/processes';
import { releaseBuild } from '../harness/release-build';
import { call, startSystem, tenantWithKey, type CallResult, type System } from '../harness/system';
import { eventually, sleep } from '../harness/wait';

// Mixed versions, as the skew policy says (docs/operations.md, "Version skew"; decision 0135): each
// service's previous and last release beside this checkout's build of every other process (the mix a
// team meets mid-rollout), on one store and one Kafka, through a tenant's whole flow: a lead refused
// for credit and another called, charged and announced; a company changed; knowledge documents
// uploaded, charged and deleted; an agent's script and an inbound call it answers; a key
// deactivated; the ledger balancing. Each phase reads back what every earlier phase wrote (data an
// old build wrote, read by a new one, and the other way). Every process exports its spans and
// metrics to a collector here: each phase must show every gRPC pair and every event pair of
// `CLAIMED` exchanging at least one message (a server span under its caller's client span; a
// consumer's process span under or linked to its producer's send span), and no fallback
// (`voiceapi.fallbacks`) it did not expect. The last phase is the canary: a planted fail-open
// fallback and a silent event pair must be refused.

type Json = Record<string, any>;
const names = loadManifest().processes.map((p) => p.name);

/** Every pair the flow must make exchange a message in every phase, as this checkout wires them. */
const CLAIMED: Claimed = {
  grpc: [
    ...['companies', 'billing', 'leads', 'telephony', 'knowledge', 'agents', 'webhooks'].map(
      (s) => ['gateway', s] as [string, string],
    ),
    ['agents', 'telephony'],
    ['agents', 'companies'],
    ['agents', 'knowledge'],
    ['knowledge', 'billing'],
    ['leads', 'billing'],
    ['leads', 'webhooks'],
    ['telephony', 'billing'],
    ['telephony', 'leads'],
    ['telephony', 'agents'],
  ],
  events: [
    ['gateway', 'gateway.control.v1', 'gateway'],
    ['companies', 'companies.v1', 'agents'],
    ['knowledge', 'knowledge.v1', 'agents'],
    ['agents', 'agents.v1', 'webhooks'],
    ['billing', 'billing.usage.v1', 'webhooks'],
    ['billing', 'billing.credit.v1', 'leads'],
    ['leads', 'leads.dial.v1', 'telephony'],
    ['leads', 'leads.contact.v1', 'webhooks'],
    ['telephony', 'telephony.call.v1', 'leads'],
    ['telephony', 'telephony.call.v1', 'webhooks'],
  ],
};
/**
 * Pairs a tenant's flow does not make, each for a reason (docs/operations.md, "Version skew"): a
 * service's events to itself meet one build; billing's own call outcome is made only by its sweeper
 * (a call whose end never came: the fault tests).
 */
const EXCUSED = [
  'leads→leads.message.v1→leads',
  'telephony→telephony.call.feed.v1→telephony',
  'billing→billing.call.v1→webhooks',
];

/**
 * What a supported release is known to do differently, each with why (docs/operations.md, "Version
 * skew"): a gRPC pair it does not make (`caller→callee`), and the fallbacks its peers make beside it.
 */
// None since the release of 2026-11-28: leads 1.2.0 (no ListSubscribedTypes) and webhooks 1.1.0 (not
// serving it, so beside it leads' counted fallback announced every status change) left the matrix then.
const KNOWN_SKEW: Record<string, { lacks: string[]; fallbacks: RegExp[] }> = {};

/** A live call lead with consent, to a number the simulator answers. */
const liveLead = (campaignId: string) => ({
  campaignId,
  phone: `+1415${200 + Math.floor(Math.random() * 700)}${1000 + Math.floor(Math.random() * 8999)}`,
  name: 'Ada',
  channel: 'call',
  consent: { outboundCall: true, capturedAt: new Date(Date.now() - 60_000).toISOString(), source: 'web form' },
});

/** The skew policy's matrix: each service's previous and last release, the rest at this checkout; this checkout alone first. */
function phases(record = readRecord()): { name: string; old?: { service: string; version: string; commit: string } }[] {
  const out: { name: string; old?: { service: string; version: string; commit: string } }[] = [
    { name: 'every process at this checkout' },
  ];
  for (const service of names) {
    const releases = record.history.filter((h) => h.released[service]).slice(-2);
    for (const r of releases)
      out.push({
        name: `${service} ${r.released[service]} beside this checkout`,
        old: { service, version: r.released[service]!, commit: r.commit },
      });
  }
  return out;
}

/**
 * Billing 1.2 refuses to append after a fixed-size wallet entry (decision 0137), so while it is in the
 * matrix this checkout's billing writes `compat`, as docs/operations.md tells an operator rolling from
 * 1.2 straight to it to do; once 1.2 leaves the matrix, the default (`fixed`) runs in every phase.
 */
const walletFormat: Record<string, string> = phases().some(
  (p) => p.old?.service === 'billing' && p.old.version.startsWith('1.2.'),
)
  ? { WALLET_ENTRY_FORMAT: 'compat' }
  : {};

describe("each service's last two releases beside this checkout", () => {
  const receiver = new Receiver();
  let otlp: OtlpCollector;
  let sys: System;
  let gw: string;
  jest.setTimeout(40 * 60_000);

  beforeAll(async () => {
    // One build per release commit, made once per machine.
    for (const p of phases()) if (p.old) releaseBuild(p.old.commit);
    await receiver.start();
    otlp = await startOtlpCollector();
    sys = await startSystem({
      env: {
        OTEL_EXPORTER_OTLP_ENDPOINT: otlp.endpoint,
        OTEL_BSP_SCHEDULE_DELAY: '200',
        OTEL_METRIC_EXPORT_INTERVAL: '1000',
      },
      serviceEnv: {
        telephony: { CARRIER_SIMULATOR_SPEEDUP: '200' },
        leads: { CALLING_WINDOW_DEFAULT: 'always', SCHEDULER_INTERVAL_MS: '200' },
        webhooks: {
          OUTBOUND_ALLOWLIST: receiver.hostPort,
          WEBHOOK_RETRY_SCHEDULE: '0,300ms,1s',
          WEBHOOK_SWEEP_INTERVAL_MS: '200',
        },
        agents: { SCRIPT_WORKER_INTERVAL_MS: '200' },
        billing: walletFormat,
      },
    });
    gw = sys.gateways[0]!.url;
  });
  afterAll(async () => {
    await sys?.stop();
    await receiver.stop();
    await otlp?.stop();
  });

  const admin = (path: string, body?: unknown, method?: string) =>
    call(`${gw}/admin/v1${path}`, { admin: true, ...(body !== undefined && { body }), ...(method && { method }) });
  const api = (key: string, path: string, body?: unknown, method?: string) =>
    call(`${gw}/api/v1${path}`, { key, ...(body !== undefined && { body }), ...(method && { method }) });

  /** Restarts one process from `root` (undefined: this checkout), with `extra` settings. */
  async function restart(name: string, root: string | undefined, extra: Record<string, string> = {}): Promise<void> {
    if (root) sys.builds[name] = root;
    else delete sys.builds[name];
    if (name === 'gateway') {
      const port = Number(new URL(gw).port);
      await sys.gateways.shift()!.proc.stop();
      await sys.startGateway(extra, port);
    } else {
      await sys.services[name]!.stop();
      await sys.startService(name, extra);
    }
  }

  /** Brings every process to the phase's build: the old one at its release, every other at this checkout. */
  async function enter(old?: { service: string; root: string }): Promise<void> {
    for (const name of names) {
      const want = old?.service === name ? old.root : undefined;
      if (sys.builds[name] !== want) await restart(name, want);
    }
  }

  /** Lets every process export what it recorded (spans every 200 ms, metrics every second). */
  const exported = () => sleep(2_500);

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
    return {
      hookPath,
      campaignId: c.body.campaign.id as string,
      phoneNumber,
      agentId: agent.body.agent.id as string,
      companyId: company.body.company.id as string,
    };
  }

  /**
   * A tenant new to every process: its first lead, before any top-up, is refused for credit (leads
   * asks billing: no view of a wallet it never heard of); its key, deactivated, is refused by the
   * gateway (the control event every gateway replica reads).
   */
  async function newcomer(): Promise<void> {
    const t = await tenantWithKey(gw, { scopes: [...SCOPES], rateLimitPerSecond: 10_000 });
    const c = await admin(`/tenants/${t.tenantId}/campaigns`, { name: 'newcomer', maxCallSeconds: 300 });
    expect(
      (await admin(`/tenants/${t.tenantId}/campaigns/${c.body.campaign.id}/start`, undefined, 'POST')).status,
    ).toBe(200);
    const lead = await api(t.key, '/leads', {
      campaignId: c.body.campaign.id,
      phone: `+1415${200 + Math.floor(Math.random() * 700)}${1000 + Math.floor(Math.random() * 8999)}`,
      name: 'Grace',
      channel: 'call',
      consent: { outboundCall: true, capturedAt: new Date(Date.now() - 60_000).toISOString(), source: 'web form' },
    });
    expect([lead.status, lead.body.reasonCode]).toEqual([402, 'insufficient_credits']);
    // Its first top-up: billing announces what the new wallet covers, and leads' view hears it.
    expect((await admin(`/tenants/${t.tenantId}/credits`, { amount: 100 })).status).toBe(201);
    expect((await admin(`/api-keys/${t.keyId}`, { status: 'inactive' }, 'PATCH')).status).toBe(200);
    await eventually(
      'the deactivated key refused',
      async () => (await api(t.key, '/companies')).status === 401,
      15_000,
      {
        intervalMs: 100,
      },
    );
  }

  /** What every phase proves, whichever builds run it. */
  async function flow(t: { tenantId: string; key: string }): Promise<void> {
    const p = await furnish(t);
    await newcomer();
    // An outbound call: lead (gateway → leads → billing), dial (telephony → leads, billing), its
    // charge (billing's events → telephony, webhooks) and the signed webhook at the tenant's server.
    const lead = await api(t.key, '/leads', liveLead(p.campaignId));
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
    // The tenant hears of both: the script (agents' event) and the upload's charge (billing's).
    for (const type of ['agent.script_ready', 'credits.usage'])
      await eventually(
        `its ${type} webhook`,
        async () => receiver.at(p.hookPath).some((r) => (JSON.parse(r.body) as Json).type === type),
        60_000,
        { intervalMs: 200 },
      );
    // The company's profile changed (companies' event: agents rewrite the scripts that read it), and a
    // document uploaded then deleted (knowledge's event: agents drop it from what they read).
    expect((await api(t.key, `/companies/${p.companyId}`, { description: 'Family practice' }, 'PATCH')).status).toBe(
      200,
    );
    const spare = new FormData();
    spare.append('file', new Blob([Buffer.from('A draft.')], { type: 'text/plain' }), 'draft.txt');
    const draft = await fetch(`${gw}/api/v1/knowledge-bases/documents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.key}` },
      body: spare,
    });
    expect(draft.status).toBe(201);
    const draftId = ((await draft.json()) as Json).document.fileId as string;
    expect((await api(t.key, `/knowledge-bases/documents/${draftId}`, undefined, 'DELETE')).status).toBe(204);
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

  /**
   * Runs the flow and answers what the phase failed to show. `old` names the phase's old release:
   * what it is known not to do (`KNOWN_SKEW`) is not asked of it; this checkout alone must also make
   * no pair the claims neither make nor excuse.
   */
  async function measured(flowOf: () => Promise<void>, old?: string): Promise<string[]> {
    await exported();
    otlp.clearSpans();
    const before = [...otlp.points];
    await flowOf();
    await exported();
    const seen = exchanges(otlp.spans);
    console.log(
      `${old ?? 'this checkout'}: exchanged ${JSON.stringify(Object.fromEntries([...seen.grpc, ...seen.events].sort()))}`,
    );
    const skew = (old && KNOWN_SKEW[old]) || { lacks: [], fallbacks: [] };
    const claimed: Claimed = {
      grpc: CLAIMED.grpc.filter(([a, b]) => !skew.lacks.includes(`${a}→${b}`)),
      events: CLAIMED.events,
    };
    return [
      ...phaseProblems(claimed, seen, fallbacksBetween(before, otlp.points), skew.fallbacks),
      ...(old ? [] : unclaimed(CLAIMED, EXCUSED, seen).map((k) => `a pair neither claimed nor excused: ${k}`)),
    ];
  }

  it('knows differences only of releases in the matrix (a stale entry would excuse nothing)', () => {
    const matrix = phases().flatMap((p) => (p.old ? [`${p.old.service} ${p.old.version}`] : []));
    expect(Object.keys(KNOWN_SKEW).filter((release) => !matrix.includes(release))).toEqual([]);
  });

  it.each(phases().map((p) => [p.name, p.old] as const))('%s', async (_name, old) => {
    const root = old && releaseBuild(old.commit);
    await enter(old && root ? { service: old.service, root } : undefined);
    tenant ??= await tenantWithKey(gw, { scopes: [...SCOPES], rateLimitPerSecond: 10_000 });
    expect(await measured(() => flow(tenant!), old && `${old.service} ${old.version}`)).toEqual([]);
    // Each process runs from the build it was meant to (its working folder is that checkout).
    const pids = {
      ...Object.fromEntries(Object.entries(sys.services).map(([n, p]) => [n, p.child.pid])),
      gateway: sys.gateways[0]!.proc.child.pid,
    };
    const runsFrom = Object.fromEntries(Object.entries(pids).map(([n, pid]) => [n, realpathSync(`/proc/${pid}/cwd`)]));
    expect(runsFrom).toEqual(
      Object.fromEntries(names.map((n) => [n, realpathSync(old?.service === n && root ? root : ROOT)])),
    );
  });

  it('refuses a phase with a fail-open fallback and a silent event pair (canary)', async () => {
    await enter(undefined);
    // Planted: leads cannot reach webhooks (it announces every status change instead), and the
    // flow changes no company (companies' event reaches no agent).
    await restart('leads', undefined, { WEBHOOKS_GRPC_ADDR: `127.0.0.1:${await freePort()}` });
    const problems = await measured(async () => {
      const p = await furnish(tenant!);
      const lead = await api(tenant!.key, '/leads', liveLead(p.campaignId));
      expect(lead.status).toBe(202);
      await eventually(
        'the contact completed',
        async () => (await api(tenant!.key, `/contacts/${lead.body.contactId}`)).body.contact?.status === 'completed',
        60_000,
        { intervalMs: 200 },
      );
    });
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^unexpected fallback: leads: webhooks ListSubscribedTypes \(service_unavailable\)/),
        'silent event pair: companies→companies.v1→agents',
      ]),
    );
    await restart('leads', undefined);
  });
});
