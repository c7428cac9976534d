// Over 300 lines because the four faults share one system, one Prometheus and one Alertmanager: a healthy run of
// ten minutes comes first, and each fault is shown on what the ones before left running.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startKafka, type KafkaHandle } from '@voiceapi/local-infra';
import { Receiver } from '../../services/webhooks/test/receiver';
import { startAlertmanager, type Alertmanager, type Notification } from '../harness/alertmanager';
import { EgressProxy } from '../harness/egress-proxy';
import { freePort } from '../harness/processes';
import { startPrometheus, type Prometheus } from '../harness/prometheus';
import { call, startSystem, tenantWithKey, type System } from '../harness/system';
import { eventually } from '../harness/wait';
import { dashboards, panelQueries } from '../../tools/dashboards';
import { scaledQuery, writeRules } from '../../tools/observability';

/**
 * The alerts on the real thing: every process pushes its real OTLP metrics to a real Prometheus
 * loaded with the rules as shipped, every window divided by SLO_WINDOW_SCALE (the one setting a
 * test may change; 60 makes the month twelve hours and the page windows 5 s and 1 min) and the
 * clocks of the cause alerts that measure time likewise (`scaleCauseRules`), sending its alerts to a
 * real Alertmanager with the shipped configuration (its waits divided alike), whose pages and
 * tickets a receiver records. The system has a Kafka of its own and sends to tenants through an
 * egress proxy, so both can fail. A tenant's calls run throughout:
 * - healthy for ten minutes (one of its endpoints failing on its own): nothing fires, nothing is
 *   delivered;
 * - billing killed: `ServiceSilent` for billing pages, and from then on nothing it explains reaches
 *   the receiver (the lead-to-dial SLO burns and fires, page and ticket, held; only billing's own
 *   credits routes, failing at once, page before it: decision 0158); every dashboard query returns
 *   data; every page clears once billing is back;
 * - the egress proxy down: the webhook-delivery page (our side failing, not the tenants');
 * - Kafka stopped: the outbox alert's page.
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
  let egress: EgressProxy;
  let kafka: KafkaHandle | undefined;
  let kafkaDir: string;
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
      // The month's minute: an alert sent before Prometheus knew its Alertmanager goes again within seconds.
      alertResendDelayS: 5,
    });
    receiver = await new Receiver().start();
    egress = await new EgressProxy().start();
    kafkaDir = mkdtempSync(path.join(tmpdir(), 'voiceapi-alerts-kafka-'));
    kafka = await startKafka({ dataDir: kafkaDir, port: await freePort(), controllerPort: await freePort() });
    sys = await startSystem({
      servers: { KAFKA_BROKERS: kafka.brokers.join(',') },
      env: { OTEL_EXPORTER_OTLP_METRICS_ENDPOINT: prom.otlpMetricsUrl, OTEL_METRIC_EXPORT_INTERVAL: '1000' },
      serviceEnv: {
        telephony: { CARRIER_SIMULATOR_SPEEDUP: '200' },
        leads: { CALLING_WINDOW_DEFAULT: 'always' },
        webhooks: { OUTBOUND_ALLOWLIST: receiver.hostPort, OUTBOUND_PROXY: egress.url },
      },
    });
  }, 240_000);

  afterAll(async () => {
    await stopLoad?.();
    await sys?.stop();
    await kafka?.stop();
    if (kafkaDir) rmSync(kafkaDir, { recursive: true, force: true });
    await egress?.stop();
    await receiver?.stop();
    await prom?.stop();
    await alertmanager?.stop();
    await alerts?.stop();
    rmSync(rulesDir, { recursive: true, force: true });
  }, 120_000);

  // What Alertmanager delivered: "page:ServiceSilent", "ticket:…" (firing notifications only).
  const delivered = () =>
    alerts
      .at('/alerts')
      .map((r) => JSON.parse(r.body) as Notification)
      .filter((n) => n.status === 'firing')
      .flatMap((n) => n.alerts.map((a) => `${n.receiver}:${a.labels.alertname}`));
  /** Alerts as Prometheus holds them, by name and severity: "firing", "pending" or "inactive". */
  const state = async (alertname: string, severity: string): Promise<'firing' | 'pending' | 'inactive'> => {
    const a = (await prom.alerts()).find((x) => x.labels.alertname === alertname && x.labels.severity === severity);
    return a?.state ?? 'inactive';
  };
  /** What Alertmanager holds of an alert: active (sent to its receiver), suppressed (inhibited or silenced). */
  const routed = async (alertname: string) => {
    const res = await fetch(
      `${alertmanager.url}/api/v2/alerts?filter=${encodeURIComponent(`alertname="${alertname}"`)}`,
    );
    const held = (await res.json()) as {
      labels: Record<string, string>;
      status: { state: string; inhibitedBy: string[] };
    }[];
    return held.map((a) => `${a.labels.severity}:${a.status.state}${a.status.inhibitedBy.length ? ':inhibited' : ''}`);
  };
  // Prometheus may not answer yet: a failed query counts as not yet; a timeout shows its output.
  const promPoll = { intervalMs: 500, retryErrors: true, detail: () => prom.output() };
  const amPoll = { intervalMs: 500, detail: () => [delivered(), alertmanager.output()] };
  /** Waits until Alertmanager delivered `alertname` as a page; its firing alert as Prometheus holds it. */
  const paged = async (alertname: string, timeoutMs: number) => {
    await eventually(
      `${alertname} delivered as a page`,
      () => delivered().includes(`page:${alertname}`),
      timeoutMs,
      amPoll,
    );
    return (await prom.alerts()).find((a) => a.labels.alertname === alertname && a.state === 'firing');
  };
  const since = (t: number) => `${((Date.now() - t) / 1000).toFixed(0)} s`;
  const errorRatio = async (slo: string, window: string) =>
    Number((await prom.query(`slo:sli_error:ratio_rate${window}{sloth_slo="${slo}"}`))[0]?.value[1] ?? NaN);
  /** The pages Prometheus holds firing or pending (tickets of a burn that ended may stay a while: slow windows). */
  const pagesHeld = async () =>
    (await prom.alerts())
      .filter((a) => a.labels.severity === 'page')
      .map((a) => `${a.labels.alertname}/${a.labels.job ?? a.labels.route_group ?? a.labels.sloth_slo}:${a.state}`);
  let campaignId = '';
  /** Statuses of lead batches the platform failed (5xx). */
  const failedBatches: number[] = [];

  it('stays quiet through ten healthy minutes with one tenant endpoint failing throughout', async () => {
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
    campaignId = (await admin('/campaigns', { name: 'alerts', maxCallSeconds: 30 })).body.campaign.id as string;
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
        // Failures are the faults' to cause: counted, the load goes on (the healthy run must have none).
        if (r.status >= 500) failedBatches.push(r.status);
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
    await eventually(
      'a healthy 30 s window and no page',
      async () =>
        (await errorRatio('lead-to-dial', '30s')) < 0.06 * 0.5 &&
        (await state('LeadToDialSLOBurn', 'page')) === 'inactive',
      120_000,
      promPoll,
    );
    expect(receiver.received.length).toBeGreaterThan(0);
    // Healthy for ten minutes (ten hours of the scaled month), one endpoint failing throughout: no
    // alert fires, nothing is paged or ticketed; the Watchdog went to its own receiver.
    await eventually('the Watchdog delivered', () => alerts.at('/watchdog').length > 0, 30_000, {
      detail: () => [
        alerts.received.map((r) => `${r.path} ${r.body.slice(0, 200)}`).slice(-5),
        alertmanager.output(),
        prom.output(),
      ],
    });
    const firingNow = async () =>
      (await prom.alerts())
        .filter((a) => a.state === 'firing' && a.labels.alertname !== 'Watchdog')
        .map((a) => `${a.labels.alertname}:${a.labels.severity}`);
    while (Date.now() - loadStarted < HEALTHY_MS) {
      expect({ firing: await firingNow(), delivered: delivered() }).toEqual({ firing: [], delivered: [] });
      await new Promise((r) => setTimeout(r, 10_000));
    }
    expect(receiver.at('/failing').length).toBeGreaterThan(0);
    expect(failedBatches).toEqual([]);
    expect({ firing: await firingNow(), delivered: delivered() }).toEqual({ firing: [], delivered: [] });

    // Every metric a shipped rule reads is one the system sends (names as Prometheus's OTLP
    // translation makes them): counters of failures exist at 0 before the first.
    const sent = new Set(
      (await prom.query('count by (__name__) ({__name__=~".+"})')).map((x) => x.metric.__name__ ?? ''),
    );
    const read = new Set<string>();
    for (const f of writeRules(path.join(rulesDir, 'shipped'), { windowScale: 1 })) {
      // A metric name is followed by its selector, its range or the end of its argument; a label name by = or ~.
      const rules =
        readFileSync(f, 'utf8').match(/(?<!["\w])(?:voiceapi|nodejs|http|rpc|target)_[a-z0-9_]+(?=[{[)\s])/g) ?? [];
      for (const name of rules) read.add(name.replace(/_(bucket|count|sum)$/, ''));
    }
    const histograms = [...sent].filter((n) => n.endsWith('_bucket')).map((n) => n.slice(0, -'_bucket'.length));
    const notSent = [...read].filter((n) => !sent.has(n) && !histograms.includes(n));
    expect(notSent).toEqual([]);
  }, 1_200_000);

  it('billing killed: ServiceSilent pages and quiets what it explains (lead-to-dial fires, page and ticket, held); every page clears once billing is back', async () => {
    sys.services.billing!.child.kill('SIGKILL');
    const killed = Date.now();
    try {
      const silent = (await paged('ServiceSilent', 120_000))!;
      expect(silent.labels.job).toBe('voiceapi/billing');
      expect(silent.annotations.runbook_url).toBe('docs/operations.md#servicesilent');
      process.stdout.write(`ServiceSilent paged ${since(killed)} after billing was killed\n`);
      // No first attempt is decided while billing is away: lead-to-dial burns, pages and tickets in
      // Prometheus; Alertmanager keeps both quiet (billing's silence explains them).
      const ALERT = 'LeadToDialSLOBurn';
      await eventually(
        `${ALERT} page and ticket firing`,
        async () => (await state(ALERT, 'page')) === 'firing' && (await state(ALERT, 'ticket')) === 'firing',
        150_000,
        promPoll,
      );
      const firing = (await prom.alerts()).find((a) => a.labels.alertname === ALERT && a.state === 'firing')!;
      expect(firing.annotations.runbook_url).toBe('docs/operations.md#leadtodialsloburn');
      expect(firing.annotations.summary).toMatch(/first call attempt/);
      await eventually(
        'the 5 s window all errors',
        async () => (await errorRatio('lead-to-dial', '5s')) > 0.9,
        30_000,
        promPoll,
      );
      process.stdout.write(`${ALERT} fired ${since(killed)} after billing was killed\n`);
      await eventually(
        `${ALERT} inhibited in Alertmanager`,
        async () => {
          const held = await routed(ALERT);
          return held.length === 2 && held.every((h) => h.endsWith(':suppressed:inhibited'));
        },
        30_000,
        { ...amPoll, retryErrors: true },
      );
      // Once billing's silence has paged, no symptom it explains reaches anyone: lead-to-dial never
      // does. (A symptom that pages before the cause can be known is delivered: the credits routes
      // fail the moment billing dies, their page within seconds; silence takes 40 s to be sure of.)
      const firingNotes = alerts
        .at('/alerts')
        .map((r) => ({ at: r.at, n: JSON.parse(r.body) as Notification }))
        .filter(({ n }) => n.status === 'firing');
      const named = (n: Notification) =>
        n.alerts.map((a) => `${n.receiver}:${a.labels.alertname}/${a.labels.job ?? a.labels.route_group}`);
      const causePaged = firingNotes.find(({ n }) => n.alerts.some((a) => a.labels.alertname === 'ServiceSilent'))!.at;
      const afterCause = firingNotes
        .filter(({ at, n }) => at > causePaged && n.alerts.some((a) => a.labels.alertname !== 'ServiceSilent'))
        .flatMap(({ n }) => named(n));
      expect(afterCause).toEqual([]);
      expect(delivered().filter((d) => d.endsWith(`:${ALERT}`))).toEqual([]);
      const unexplained = [...new Set(firingNotes.flatMap(({ n }) => named(n)))].filter(
        (d) => !/\/(credits|voiceapi\/billing)$/.test(d),
      );
      expect(unexplained).toEqual([]);

      // While they fire: every dashboard panel's query parses and returns data from what the system
      // sent (the firing alerts' panel included; no query is padded to always have data). Grafana's
      // rate interval reaches back to before the kill: billing's own panels have no sample since.
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
    } finally {
      // Billing back (also when an assertion above failed, so the faults after this one meet a whole system).
      await sys.startService('billing');
    }
    const back = Date.now();
    // The queued dials are placed, and everything clears as the short windows recover.
    // Every page clears; a ticket may outlast them: its slowest window (three days, scaled 72 min)
    // still holds the outage.
    await eventually('no page firing or pending', pagesHeld, 240_000, {
      ...promPoll,
      done: (held) => held.length === 0,
      detail: (held) => held,
    });
    process.stdout.write(`every page clear ${since(back)} after billing was back\n`);
  }, 600_000);

  it('our egress failing pages webhook delivery; a tenant endpoint failing never did', async () => {
    const ALERT = 'WebhookDeliverySLOBurn';
    // Billed calls reach the tenant's endpoints through the proxy again (after billing's outage).
    const deliveries = receiver.received.length;
    await eventually('deliveries flowing', () => receiver.received.length > deliveries + 10, 120_000);
    expect(egress.tunnelled).toBeGreaterThan(0);
    const pagesBefore = delivered().filter((d) => d === `page:${ALERT}`).length;
    expect(pagesBefore).toBe(0);
    await egress.stop();
    const down = Date.now();
    await paged(ALERT, 150_000);
    process.stdout.write(`${ALERT} paged ${since(down)} after the egress proxy went down\n`);
    await egress.start();
    const up = Date.now();
    await eventually(
      `${ALERT} page cleared`,
      async () => (await state(ALERT, 'page')) === 'inactive',
      240_000,
      promPoll,
    );
    process.stdout.write(`${ALERT} cleared ${since(up)} after the egress proxy was back\n`);
  }, 600_000);

  it('Kafka stopped: the outbox alert pages', async () => {
    await kafka!.stop();
    const stopped = Date.now();
    const stuck = (await paged('OutboxStuck', 180_000))!;
    expect(stuck.annotations.runbook_url).toBe('docs/operations.md#outboxstuck');
    process.stdout.write(`OutboxStuck (${stuck.labels.job}) paged ${since(stopped)} after Kafka was stopped\n`);
    // Kafka back before the system stops, so its processes stop as they would.
    await stopLoad?.();
    stopLoad = undefined;
    kafka = await startKafka({ dataDir: kafkaDir, port: Number(kafka!.port), controllerPort: kafka!.controllerPort });
  }, 600_000);
});
