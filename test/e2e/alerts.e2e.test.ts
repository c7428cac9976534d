import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Receiver } from '../../services/webhooks/test/receiver';
import { startAlertmanager, type Alertmanager, type Notification } from '../harness/alertmanager';
import { startPrometheus, type Prometheus } from '../harness/prometheus';
import { call, startSystem, tenantWithKey, type System } from '../harness/system';
import { eventually } from '../harness/wait';
import { dashboards, panelQueries } from '../tools/dashboards';
import { scaledQuery, writeRules } from '../tools/observability';

/**
 * The SLO alerts on the real thing: every process pushes its real OTLP metrics to a real
 * Prometheus loaded with the rules as shipped, every window divided by SLO_WINDOW_SCALE (the one
 * setting a test may change; 60 makes the month twelve hours and the page windows 5 s and 1 min),
 * sending its alerts to a real Alertmanager with the shipped configuration (its waits divided
 * alike), whose pages and tickets a receiver records. A tenant's calls run throughout, healthy
 * for ten minutes first (one of its endpoints failing on its own): no alert fires, nothing reaches
 * the receiver. Billing is killed: telephony can place no hold, so leads go
 * on being accepted and queued but no call is placed; as each lead's minute passes it counts late,
 * and the lead-to-dial SLO's page must fire and be delivered, its ticket fire and be kept quiet.
 * Then every dashboard panel's query must parse and return data from what the system sent, and
 * the page clears once billing is back.
 */
const SLO_WINDOW_SCALE = 60;
/** How long the healthy system runs before billing is killed: nothing may fire meanwhile. */
const HEALTHY_MS = 10 * 60_000;

describe('SLO alerts on a real Prometheus', () => {
  let prom: Prometheus;
  let sys: System;
  let receiver: Receiver;
  let alerts: Receiver;
  let alertmanager: Alertmanager;
  let rulesDir: string;
  let stopLoad: (() => Promise<void>) | undefined;
  const consent = { outboundCall: true, capturedAt: '2026-11-01T10:00:00Z' };
  let phoneNo = 0;
  // Numbers the carrier simulator answers (see test/bench/whole-system.ts), distinct across the run.
  const phone = () => {
    const n = phoneNo++;
    return `+1415${200 + (Math.floor(n / 9000) % 700)}${1000 + (n % 9000)}`;
  };

  beforeAll(async () => {
    rulesDir = mkdtempSync(path.join(tmpdir(), 'voiceapi-rules-'));
    alerts = await new Receiver().start();
    alertmanager = await startAlertmanager({
      webhookUrl: `${alerts.base}/alerts`,
      watchdogUrl: `${alerts.base}/watchdog`,
      timeScale: SLO_WINDOW_SCALE,
    });
    prom = await startPrometheus({
      ruleFiles: writeRules(rulesDir, { windowScale: SLO_WINDOW_SCALE }),
      evaluationIntervalS: 1,
      alertmanagers: [alertmanager.target],
    });
    receiver = await new Receiver().start();
    sys = await startSystem({
      env: { OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: prom.otlpMetricsUrl, OTEL_METRIC_EXPORT_INTERVAL: '1000' },
      serviceEnv: {
        telephony: { CARRIER_SIMULATOR_SPEEDUP: '200' },
        leads: { CALLING_WINDOW_DEFAULT: 'always' },
        webhooks: { OUTBOUND_ALLOWLIST: receiver.hostPort },
      },
    });
  }, 180_000);

  afterAll(async () => {
    await stopLoad?.();
    await sys?.stop();
    await receiver?.stop();
    await prom?.stop();
    await alertmanager?.stop();
    await alerts?.stop();
    rmSync(rulesDir, { recursive: true, force: true });
  }, 120_000);

  const ALERT = 'LeadToDialSLOBurn';
  // What Alertmanager delivered: "page:LeadToDialSLOBurn", "ticket:…" (firing notifications only).
  const delivered = () =>
    alerts
      .at('/alerts')
      .map((r) => JSON.parse(r.body) as Notification)
      .filter((n) => n.status === 'firing')
      .flatMap((n) => n.alerts.map((a) => `${n.receiver}:${a.labels.alertname}`));
  const firingIn = async (severity: string) =>
    (await prom.alerts()).some(
      (x) => x.labels.alertname === ALERT && x.labels.severity === severity && x.state === 'firing',
    );
  const page = async (): Promise<'firing' | 'pending' | 'inactive'> => {
    const a = (await prom.alerts()).find((x) => x.labels.alertname === ALERT && x.labels.severity === 'page');
    return a?.state ?? 'inactive';
  };
  // Prometheus may not answer yet: a failed query counts as not yet; a timeout shows its output.
  const promPoll = { intervalMs: 500, retryErrors: true, detail: () => prom.output() };

  it('pages when billing is killed under a tenant calls, and clears once billing is back; every dashboard query returns data', async () => {
    const gw = sys.gateways[0]!.url;
    const t = await tenantWithKey(gw, {
      rateLimitPerSecond: 100_000,
      scopes: [
        'calls:read',
        'credits:read',
        'leads:read',
        'leads:write',
        'companies:read',
        'knowledge:read',
        'inbound:read',
      ],
    });
    const admin = (p: string, body?: unknown, method?: string) =>
      call(`${gw}/admin/v1/tenants/${t.tenantId}${p}`, {
        admin: true,
        ...(body !== undefined && { body }),
        ...(method && { method }),
      });
    expect((await admin('/credits', { amount: 100_000_000 })).status).toBe(201);
    expect((await admin('/concurrency', { maxConcurrentCalls: 50 }, 'PUT')).status).toBe(200);
    // Calls of at most 30 s: ten minutes of them keep the recordings (object storage on this disk) small.
    const campaignId = (await admin('/campaigns', { name: 'alerts', maxCallSeconds: 30 })).body.campaign.id as string;
    await admin(`/campaigns/${campaignId}/start`, undefined, 'POST');
    const hook = await admin('/webhooks', { url: `${receiver.base}/billed`, events: ['call.outbound.billed'] });
    expect(hook.status).toBe(201);
    receiver.secrets.set('/billed', [hook.body.webhook.secret]);
    // One of the tenant's endpoints fails on its own, throughout: the tenant's, never a page.
    expect(
      (await admin('/webhooks', { url: `${receiver.base}/failing`, events: ['call.outbound.billed'] })).status,
    ).toBe(201);
    receiver.behave = (p) => ({ status: p === '/failing' ? 500 : 204 });

    // The tenant's load: a few leads a second, and reads that reach every service.
    const reads = [
      '/calls?limit=5',
      '/credits',
      '/campaigns',
      '/companies',
      '/inbound-agents',
      '/knowledge-bases/documents',
    ];
    for (const p of reads) expect([p, (await call(`${gw}/api/v1${p}`, { key: t.key })).status]).toEqual([p, 200]);
    // And a tenant's mistake now and then (the 4xx panels).
    const missing = '/companies/does-not-exist';
    expect(Math.floor((await call(`${gw}/api/v1${missing}`, { key: t.key })).status / 100)).toBe(4);
    const loadStarted = Date.now();
    let loading = true;
    const load = (async () => {
      while (loading) {
        const r = await call(`${gw}/api/v1/leads/batch`, {
          key: t.key,
          body: { campaignId, leads: Array.from({ length: 2 }, () => ({ phone: phone(), channel: 'call', consent })) },
        });
        if (r.status >= 500) throw new Error(`lead batch: ${r.status}`);
        for (const p of [...reads, missing]) await call(`${gw}/api/v1${p}`, { key: t.key });
        await new Promise((r) => setTimeout(r, 1_000));
      }
    })();
    stopLoad = async () => {
      loading = false;
      await load;
    };

    // Healthy first: calls end and are charged, and the SLO's 1-minute window (the month's hour) sees it.
    const present = async (metric: string) => (await prom.query(`sum(${metric}) > 0`)).length > 0;
    await eventually(
      'calls ended, charged and announced, in Prometheus',
      async () =>
        (await present('voiceapi_telephony_calls_charged_total{late="false"}')) &&
        (await present('voiceapi_webhooks_delivery_first_attempts_total{late="false"}')),
      120_000,
      promPoll,
    );
    await eventually(
      'the lead-to-dial SLO recorded over its long page window',
      async () => (await prom.query('slo:sli_error:ratio_rate1m{sloth_slo="lead-to-dial"}'))[0],
      60_000,
      promPoll,
    );
    // The burn as the rules see it: its 30 s window (the month's 30 min) settles well under the slow
    // page's 6x once every series has a full window behind it (a counter's first samples are not a rate).
    const errorRatio = async (window: string) =>
      Number((await prom.query(`slo:sli_error:ratio_rate${window}{sloth_slo="lead-to-dial"}`))[0]?.value[1] ?? NaN);
    await eventually(
      'a healthy 30 s window and no page',
      async () => (await errorRatio('30s')) < 0.06 * 0.5 && (await page()) === 'inactive',
      120_000,
      promPoll,
    );
    expect(receiver.received.length).toBeGreaterThan(0);
    // Healthy for ten minutes (ten hours of the scaled month), one endpoint failing throughout: no
    // alert fires, nothing is paged or ticketed; the Watchdog went to its own receiver.
    await eventually('the Watchdog delivered', () => alerts.at('/watchdog').length > 0, 30_000);
    const firingNow = async () =>
      (await prom.alerts())
        .filter((a) => a.state === 'firing' && a.labels.alertname !== 'Watchdog')
        .map((a) => `${a.labels.alertname}:${a.labels.severity}`);
    while (Date.now() - loadStarted < HEALTHY_MS) {
      expect({ firing: await firingNow(), delivered: delivered() }).toEqual({ firing: [], delivered: [] });
      await new Promise((r) => setTimeout(r, 10_000));
    }
    expect(receiver.at('/failing').length).toBeGreaterThan(0);
    expect({ firing: await firingNow(), delivered: delivered() }).toEqual({ firing: [], delivered: [] });

    // Every metric a shipped rule reads is one the system sends (names as Prometheus's OTLP
    // translation makes them), but for counters that exist only once their event happened.
    const sent = new Set(
      (await prom.query('count by (__name__) ({__name__=~".+"})')).map((x) => x.metric.__name__ ?? ''),
    );
    const onlyOnceItHappens = new Set(['voiceapi_events_dead_lettered_total', 'voiceapi_store_slow_commands_total']);
    const read = new Set<string>();
    for (const f of writeRules(path.join(rulesDir, 'shipped'), { windowScale: 1 })) {
      // A metric name is followed by its selector, its range or the end of its argument; a label name by = or ~.
      const rules =
        readFileSync(f, 'utf8').match(/(?<!["\w])(?:voiceapi|nodejs|http|rpc|target)_[a-z0-9_]+(?=[{[)\s])/g) ?? [];
      for (const name of rules) read.add(name.replace(/_(bucket|count|sum)$/, ''));
    }
    const histograms = [...sent].filter((n) => n.endsWith('_bucket')).map((n) => n.slice(0, -'_bucket'.length));
    const notSent = [...read].filter((n) => !sent.has(n) && !histograms.includes(n) && !onlyOnceItHappens.has(n));
    expect(notSent).toEqual([]);

    // Billing dies; the tenant goes on sending leads.
    sys.services.billing!.child.kill('SIGKILL');
    const killed = Date.now();
    await eventually(`${ALERT} firing`, async () => (await page()) === 'firing', 150_000, promPoll);
    const firing = (await prom.alerts()).find((a) => a.labels.alertname === ALERT && a.state === 'firing')!;
    expect(firing.annotations.runbook_url).toBe('docs/operations.md#leadtodialsloburn');
    expect(firing.annotations.summary).toMatch(/first call attempt/);
    // No first attempt is decided while billing is away: the shortest window goes to all errors.
    await eventually('the 5 s window all errors', async () => (await errorRatio('5s')) > 0.9, 30_000, promPoll);
    process.stdout.write(`${ALERT} fired ${((Date.now() - killed) / 1000).toFixed(0)} s after billing was killed\n`);
    // Delivered: the page. Its ticket fires too; that a firing page keeps it quiet is shown on the real
    // Alertmanager by alert-routing.test.ts: here, at windows divided by 60, the page's 5 s window
    // flaps under load (pushes every second) and the ticket may pass in a gap.
    await eventually(`${ALERT}'s page delivered`, () => delivered().includes(`page:${ALERT}`), 30_000, {
      detail: () => [delivered(), alertmanager.output()],
    });
    await eventually(`${ALERT}'s ticket firing in Prometheus`, () => firingIn('ticket'), 150_000, promPoll);
    // While it fires: every dashboard panel's query parses and returns data from what the system
    // sent (the firing alerts' panel included). Grafana's rate interval reaches back to before the
    // kill: billing's own panels have no sample since (the alert may take over a minute to fire).
    // A panel reading a recording rule has data once the rule's next evaluation has samples in
    // its (scaled) window: under load that may take an evaluation or two, so the panels are asked
    // again for a while before one without data is a failure.
    const emptyPanels = async () => {
      const rateInterval = `${Math.max(60, Math.ceil((Date.now() - killed) / 1000) + 30)}s`;
      const empty: string[] = [];
      for (const [file, d] of Object.entries(dashboards())) {
        for (const { panel, expr } of panelQueries(d)) {
          // Grafana's rate interval, and the SLO windows as these rules name them (divided by the scale).
          const result = await prom
            .query(scaledQuery(expr.replaceAll('$__rate_interval', rateInterval), SLO_WINDOW_SCALE))
            .catch((err: Error) => err);
          if (result instanceof Error) empty.push(`${file} "${panel}" does not parse: ${result.message}`);
          else if (result.length === 0) empty.push(`${file} "${panel}" returns no data: ${expr}`);
        }
      }
      return empty;
    };
    let empty = await emptyPanels();
    for (const until = Date.now() + 30_000; empty.length > 0 && Date.now() < until; empty = await emptyPanels())
      await new Promise((r) => setTimeout(r, 2_000));
    expect(empty).toEqual([]);

    // Billing back: the queued dials are placed, and the page clears as its short windows recover.
    await sys.startService('billing');
    const back = Date.now();
    await eventually(`${ALERT} cleared`, async () => (await page()) === 'inactive', 240_000, promPoll);
    process.stdout.write(`${ALERT} cleared ${((Date.now() - back) / 1000).toFixed(0)} s after billing was back\n`);
  }, 1_500_000);
});
