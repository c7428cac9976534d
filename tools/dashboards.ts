// Over 300 lines because every dashboard is generated here from one set of panel builders, so the dashboards stay alike.
/**
 * The Grafana dashboards the umbrella chart ships (charts/platform/files/dashboards/, one ConfigMap
 * each when observability.dashboards.enabled): generated here, committed, checked current by
 * scripts/chart-checks.sh (decision 0129).
 *
 *   node --import tsx tools/dashboards.ts              write every dashboard (and remove any the
 *                                                           generator no longer makes)
 *   node --import tsx tools/dashboards.ts --check      exit 1 naming each file that differs, is
 *                                                           missing or is not generated
 *   --dir DIR                                               another folder than the chart's
 *
 * Every query is concrete: the only template variable is the Prometheus data source. Metric and
 * label names are those Prometheus stores from the processes' OTLP pushes; they are written once,
 * in the tables below.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '..');
export const DASHBOARD_DIR = path.join(ROOT, 'charts/platform/files/dashboards');

// ------------------------------------------------------------------------------ names, once each
// Prometheus's OTLP translation (UnderscoreEscapingWithSuffixes, its default): dots become
// underscores, the unit is appended (s: _seconds, ms: _milliseconds, By: _bytes, 1: _ratio, {…}:
// nothing), counters end in _total; histograms are read as <name>_bucket / _count / _sum.

/** Every metric the dashboards read, as Prometheus stores it (the OTel instrument in the comment). */
export const METRICS = {
  httpDuration: 'http_server_request_duration_seconds', // http.server.request.duration (s histogram), gateway
  rpcDuration: 'rpc_server_call_duration_seconds', // rpc.server.call.duration (s histogram), gRPC services (libs/kit/src/grpc/server.ts)
  eventLoopUtilization: 'nodejs_eventloop_utilization_ratio', // nodejs.eventloop.utilization (1)
  heapUsed: 'v8js_memory_heap_used_bytes', // v8js.memory.heap.used (By), per heap space
  outboxBacklog: 'voiceapi_outbox_backlog', // voiceapi.outbox.backlog ({event} gauge)
  outboxOldestAge: 'voiceapi_outbox_oldest_age_seconds', // voiceapi.outbox.oldest_age (s gauge)
  outboxParked: 'voiceapi_outbox_parked', // voiceapi.outbox.parked ({event} gauge)
  groupLag: 'voiceapi_events_group_lag', // voiceapi.events.group.lag ({message} gauge; every member reports its group's)
  deadLettered: 'voiceapi_events_dead_lettered_total', // voiceapi.events.dead_lettered ({event} counter)
  retries: 'voiceapi_events_retries_total', // voiceapi.events.retries ({event} counter)
  storeOperations: 'voiceapi_store_operations_total', // voiceapi.store.operations (counter)
  slowCommands: 'voiceapi_store_slow_commands_total', // voiceapi.store.slow_commands ({command} counter)
  leaseHeld: 'voiceapi_lease_held_ratio', // voiceapi.lease.held (gauge, unit 1)
  leads: 'voiceapi_leads_leads_total', // voiceapi.leads.leads (counter)
  dials: 'voiceapi_telephony_dials_total', // voiceapi.telephony.dials (counter)
  callsEnded: 'voiceapi_telephony_calls_ended_total', // voiceapi.telephony.calls.ended ({call} counter)
  callsCharged: 'voiceapi_telephony_calls_charged_total', // voiceapi.telephony.calls.charged ({call} counter, late)
  firstDials: 'voiceapi_telephony_lead_first_dials_total', // voiceapi.telephony.lead.first_dials ({lead} counter, late)
  firstAttempts: 'voiceapi_webhooks_delivery_first_attempts_total', // voiceapi.webhooks.delivery.first_attempts (late)
  dialDelay: 'voiceapi_telephony_lead_dial_delay_seconds', // voiceapi.telephony.lead.dial_delay (s histogram)
  callsBilled: 'voiceapi_billing_calls_billed_total', // voiceapi.billing.calls_billed (counter)
  settleDelay: 'voiceapi_billing_call_settle_delay_seconds', // voiceapi.billing.call.settle_delay (s histogram)
  webhookAttempts: 'voiceapi_webhooks_delivery_attempts_total', // voiceapi.webhooks.delivery.attempts (counter)
  webhookDelay: 'voiceapi_webhooks_delivery_delay_seconds', // voiceapi.webhooks.delivery.delay (s histogram)
  alerts: 'ALERTS', // Prometheus's own: every pending or firing alert
} as const;

/** Sloth's recording rules (charts/platform/files/prometheus/slos.rules.yaml), by SLO. */
export const SLO = {
  errorRatio5m: 'slo:sli_error:ratio_rate5m',
  errorRatio1h: 'slo:sli_error:ratio_rate1h',
  currentBurnRate: 'slo:current_burn_rate:ratio',
  periodBurnRate: 'slo:period_burn_rate:ratio',
  budgetRemaining: 'slo:period_error_budget_remaining:ratio',
  objective: 'slo:objective:ratio',
  /** Every SLO rule of the platform carries it (observability/slos.yaml, `service`). */
  selector: 'sloth_service="voiceapi"',
} as const;

/** Labels (OTel attributes, dots as underscores). */
export const LABELS = {
  route: 'http_route',
  method: 'http_request_method',
  status: 'http_response_status_code',
  rpcMethod: 'rpc_method', // <package.Service>/<Method>
  grpcStatus: 'rpc_response_status_code', // the status code's name: OK, NOT_FOUND, …
  group: 'group',
  topic: 'topic',
  collection: 'collection',
  operation: 'operation',
  lease: 'lease',
  outcome: 'outcome',
  result: 'result',
  direction: 'direction',
  fault: 'fault',
  late: 'late',
  eventType: 'event_type',
} as const;

/** Label values the funnel and the error ratios pick. */
const VALUES = {
  leadAccepted: 'queued|scheduled', // voiceapi.leads.leads outcome: accepted for a live call (sandbox_accepted and refusals are not)
  dialled: 'dialled', // voiceapi.telephony.dials result
  outbound: 'outbound',
  charged: 'charged', // voiceapi.billing.calls_billed outcome
  delivered: 'delivered', // voiceapi.webhooks.delivery.attempts outcome
  http5xx: '5..',
  http4xx: '4..',
  // gRPC codes a server answers when it, not the caller, failed (the others are answers about the request).
  grpcServerError: 'UNKNOWN|DEADLINE_EXCEEDED|UNIMPLEMENTED|INTERNAL|UNAVAILABLE|DATA_LOSS',
  longLived: '.*/stream', // the live call stream: an answer lasts as long as the tenant listens
} as const;

/**
 * `job` as Prometheus's OTLP receiver sets it: service.namespace/service.name, and the charts (and
 * the test harness) set service.namespace=voiceapi (global.partOf) and service.name to the process.
 */
export const job = (...services: string[]) =>
  services.length === 1 ? `job="voiceapi/${services[0]}"` : `job=~"voiceapi/(${services.join('|')})"`;

/** Every process: its dashboard is voiceapi-<name>.json. */
export const SERVICES = [
  'gateway',
  'leads',
  'telephony',
  'billing',
  'agents',
  'companies',
  'knowledge',
  'webhooks',
] as const;
type Service = (typeof SERVICES)[number];
/** Those with an outbox (startEvents' `outboxOn`): webhooks publishes nothing with its writes. */
const WRITES_EVENTS: readonly Service[] = [
  'gateway',
  'leads',
  'telephony',
  'billing',
  'agents',
  'companies',
  'knowledge',
];
/** Those with event consumers (an EventSubscriber): companies, knowledge and billing read no stream (telephony settles calls with billing over gRPC). */
const READS_EVENTS: readonly Service[] = ['gateway', 'leads', 'telephony', 'agents', 'webhooks'];

/**
 * The processes push every OTEL_METRIC_EXPORT_INTERVAL (60 s, libs/kit/src/telemetry/sdk.ts):
 * a rate needs two samples in its window, so no panel steps below twice that ($__rate_interval is
 * then at least 2 min plus the data source's scrape interval).
 */
const MIN_STEP = '2m';
const RATE = '$__rate_interval';

// ------------------------------------------------------------------------------ the JSON model

export interface GrafanaTarget {
  refId: string;
  expr: string;
  legendFormat: string;
  datasource: { type: 'prometheus'; uid: string };
  editorMode: 'code';
  range: boolean;
  instant: boolean;
  format?: 'time_series' | 'table';
}

export interface GrafanaPanel {
  id: number;
  type: string;
  title: string;
  description?: string;
  gridPos: { h: number; w: number; x: number; y: number };
  datasource?: { type: 'prometheus'; uid: string };
  targets?: GrafanaTarget[];
  fieldConfig?: Record<string, unknown>;
  options?: Record<string, unknown>;
  interval?: string;
  collapsed?: boolean;
  panels?: GrafanaPanel[];
  transformations?: unknown[];
}

export interface GrafanaDashboard {
  uid: string;
  title: string;
  description: string;
  tags: string[];
  schemaVersion: number;
  version: number;
  editable: boolean;
  graphTooltip: number;
  time: { from: string; to: string };
  refresh: string;
  timezone: string;
  fiscalYearStartMonth: number;
  weekStart: string;
  timepicker: Record<string, unknown>;
  links: unknown[];
  annotations: { list: unknown[] };
  templating: { list: unknown[] };
  panels: GrafanaPanel[];
}

const DATASOURCE = { type: 'prometheus', uid: '${datasource}' } as const;

type Unit = 'reqps' | 'cps' | 'percentunit' | 's' | 'bytes' | 'short' | 'none';

interface Query {
  expr: string;
  legend?: string;
}

/** A panel before it is placed: its width (of 24) and height. */
interface Spec {
  w: number;
  h?: number;
  build: (id: number, gridPos: GrafanaPanel['gridPos']) => GrafanaPanel;
}

function targets(queries: Query[], instant = false, format?: 'table'): GrafanaTarget[] {
  return queries.map((q, i) => ({
    refId: String.fromCharCode(65 + i),
    expr: q.expr,
    legendFormat: q.legend ?? '__auto',
    datasource: DATASOURCE,
    editorMode: 'code',
    range: !instant,
    instant,
    ...(format && { format }),
  }));
}

interface PanelOpts {
  title: string;
  description: string;
  unit: Unit;
  queries: Query[];
  w?: number;
  h?: number;
  min?: number;
  max?: number;
  stack?: boolean;
  thresholds?: { color: string; value: number | null }[];
}

function timeseries(o: PanelOpts): Spec {
  return {
    w: o.w ?? 12,
    h: o.h,
    build: (id, gridPos) => ({
      id,
      type: 'timeseries',
      title: o.title,
      description: o.description,
      gridPos,
      datasource: DATASOURCE,
      interval: MIN_STEP,
      targets: targets(o.queries),
      fieldConfig: {
        defaults: {
          unit: o.unit,
          ...(o.min !== undefined && { min: o.min }),
          ...(o.max !== undefined && { max: o.max }),
          custom: {
            drawStyle: 'line',
            lineWidth: 1,
            fillOpacity: o.stack ? 30 : 10,
            showPoints: 'never',
            spanNulls: false,
            stacking: { mode: o.stack ? 'normal' : 'none', group: 'A' },
          },
          ...(o.thresholds && { thresholds: { mode: 'absolute', steps: o.thresholds } }),
        },
        overrides: [],
      },
      options: {
        legend: { displayMode: 'table', placement: 'bottom', showLegend: true, calcs: ['lastNotNull', 'max'] },
        tooltip: { mode: 'multi', sort: 'desc' },
      },
    }),
  };
}

/** Current values, one bar per series (instant queries). */
function bars(o: PanelOpts): Spec {
  return {
    w: o.w ?? 8,
    h: o.h,
    build: (id, gridPos) => ({
      id,
      type: 'bargauge',
      title: o.title,
      description: o.description,
      gridPos,
      datasource: DATASOURCE,
      interval: MIN_STEP,
      targets: targets(o.queries, true),
      fieldConfig: {
        defaults: {
          unit: o.unit,
          ...(o.min !== undefined && { min: o.min }),
          ...(o.max !== undefined && { max: o.max }),
          thresholds: { mode: 'absolute', steps: o.thresholds ?? [{ color: 'green', value: null }] },
        },
        overrides: [],
      },
      options: {
        orientation: 'horizontal',
        displayMode: 'gradient',
        showUnfilled: true,
        reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false },
      },
    }),
  };
}

/** Rows of an instant query, every label a column. */
function table(o: Omit<PanelOpts, 'unit'> & { hide: string[] }): Spec {
  return {
    w: o.w ?? 24,
    h: o.h,
    build: (id, gridPos) => ({
      id,
      type: 'table',
      title: o.title,
      description: o.description,
      gridPos,
      datasource: DATASOURCE,
      targets: targets(o.queries, true, 'table'),
      fieldConfig: { defaults: {}, overrides: [] },
      options: { showHeader: true, cellHeight: 'sm', footer: { show: false, reducer: ['sum'], fields: '' } },
      transformations: [
        {
          id: 'organize',
          options: {
            excludeByName: Object.fromEntries(o.hide.map((f) => [f, true])),
            indexByName: {},
            renameByName: {},
          },
        },
      ],
    }),
  };
}

interface Row {
  title: string;
  panels: Spec[];
}

/** Places rows and their panels left to right, top to bottom, on Grafana's 24-column grid. */
function layout(rows: Row[]): GrafanaPanel[] {
  const out: GrafanaPanel[] = [];
  let id = 1;
  let y = 0;
  for (const row of rows) {
    out.push({
      id: id++,
      type: 'row',
      title: row.title,
      collapsed: false,
      gridPos: { h: 1, w: 24, x: 0, y },
      panels: [],
    });
    y += 1;
    let x = 0;
    let rowHeight = 0;
    for (const p of row.panels) {
      const h = p.h ?? 8;
      if (x + p.w > 24) {
        y += rowHeight;
        x = 0;
        rowHeight = 0;
      }
      out.push(p.build(id++, { h, w: p.w, x, y }));
      x += p.w;
      rowHeight = Math.max(rowHeight, h);
    }
    y += rowHeight;
  }
  return out;
}

function dashboard(uid: string, title: string, description: string, tags: string[], rows: Row[]): GrafanaDashboard {
  return {
    uid,
    title,
    description,
    tags: ['voiceapi', ...tags],
    schemaVersion: 39,
    version: 1,
    editable: true,
    graphTooltip: 1,
    time: { from: 'now-6h', to: 'now' },
    refresh: '1m',
    timezone: '',
    fiscalYearStartMonth: 0,
    weekStart: '',
    timepicker: {},
    links: [
      {
        title: 'voiceapi dashboards',
        type: 'dashboards',
        tags: ['voiceapi'],
        asDropdown: true,
        includeVars: true,
        keepTime: true,
        targetBlank: false,
        icon: 'external link',
        tooltip: '',
        url: '',
      },
    ],
    annotations: {
      list: [
        {
          builtIn: 1,
          datasource: { type: 'grafana', uid: '-- Grafana --' },
          enable: true,
          hide: true,
          iconColor: 'rgba(0, 211, 255, 1)',
          name: 'Annotations & Alerts',
          type: 'dashboard',
        },
      ],
    },
    templating: {
      list: [
        {
          name: 'datasource',
          label: 'Prometheus',
          type: 'datasource',
          query: 'prometheus',
          current: {},
          hide: 0,
          includeAll: false,
          multi: false,
          options: [],
          refresh: 1,
          regex: '',
          skipUrlSync: false,
        },
      ],
    },
    panels: layout(rows),
  };
}

// ------------------------------------------------------------------------------ PromQL helpers

/** `metric{matchers}` */
const sel = (metric: string, ...matchers: string[]) => `${metric}{${matchers.join(',')}}`;
const rate = (metric: string, ...matchers: string[]) => `rate(${sel(metric, ...matchers)}[${RATE}])`;
const by = (labels: string[]) => (labels.length ? ` by (${labels.join(', ')})` : '');
const sumRate = (labels: string[], metric: string, ...matchers: string[]) =>
  `sum${by(labels)} (${rate(metric, ...matchers)})`;
const quantile = (q: number, labels: string[], histogram: string, ...matchers: string[]) =>
  `histogram_quantile(${q}, ${sumRate(['le', ...labels], `${histogram}_bucket`, ...matchers)})`;
const legendOf = (labels: string[]) => labels.map((l) => `{{${l}}}`).join(' ');
/** part ÷ whole, 0 (not "no data") where the part has no series: a counter of failures exists only once one happened. */
const share = (part: string, whole: string) => `(${part} or ${whole} * 0) / ${whole}`;
const is = (label: string, value: string) => `${label}="${value}"`;
const matches = (label: string, value: string) => `${label}=~"${value}"`;
const not = (label: string, value: string) => `${label}!~"${value}"`;

/** p50 and p99 of a histogram, per `labels`. */
function latency(
  title: string,
  description: string,
  unit: Unit,
  histogram: string,
  labels: string[],
  ...matchers: string[]
): Spec {
  return timeseries({
    title,
    description,
    unit,
    min: 0,
    queries: [0.5, 0.99].map((q) => ({
      expr: quantile(q, labels, histogram, ...matchers),
      legend: `p${q * 100} ${legendOf(labels)}`.trim(),
    })),
  });
}

// ------------------------------------------------------------------------------ per service

function requestRows(s: Service): Row {
  const j = job(s);
  if (s === 'gateway') {
    const H = METRICS.httpDuration;
    const routeLabels = [LABELS.method, LABELS.route];
    return {
      title: 'Requests (HTTP, per route)',
      panels: [
        timeseries({
          title: 'Requests per second',
          description: 'Every answered request, per method and route (probes are not recorded).',
          unit: 'reqps',
          min: 0,
          queries: [{ expr: sumRate(routeLabels, `${H}_count`, j), legend: legendOf(routeLabels) }],
        }),
        timeseries({
          title: '5xx ratio',
          description:
            'Share of each route’s answers that were 5xx: the platform failed the tenant (4xx are the tenant’s).',
          unit: 'percentunit',
          min: 0,
          queries: [
            {
              expr: share(
                sumRate([LABELS.route], `${H}_count`, j, matches(LABELS.status, VALUES.http5xx)),
                sumRate([LABELS.route], `${H}_count`, j),
              ),
              legend: `{{${LABELS.route}}}`,
            },
          ],
        }),
        timeseries({
          title: '4xx per second',
          description:
            'Answers refusing the request (validation, auth, scopes, rate limit, not found), per route and status.',
          unit: 'reqps',
          min: 0,
          queries: [
            {
              expr: sumRate([LABELS.route, LABELS.status], `${H}_count`, j, matches(LABELS.status, VALUES.http4xx)),
              legend: `{{${LABELS.status}}} {{${LABELS.route}}}`,
            },
          ],
        }),
        latency(
          'Latency',
          'Time to answer, p50 and p99 per route; the live call stream (long-lived by design) is left out.',
          's',
          H,
          [LABELS.route],
          j,
          not(LABELS.route, VALUES.longLived),
        ),
      ],
    };
  }
  const R = METRICS.rpcDuration;
  return {
    title: 'Requests (gRPC, per method)',
    panels: [
      timeseries({
        title: 'Calls per second',
        description: 'Every gRPC call served, per method (the kubelet’s health probes are not recorded).',
        unit: 'reqps',
        min: 0,
        queries: [{ expr: sumRate([LABELS.rpcMethod], `${R}_count`, j), legend: `{{${LABELS.rpcMethod}}}` }],
      }),
      timeseries({
        title: 'Server error ratio',
        description:
          'Share of each method’s calls answered UNKNOWN, DEADLINE_EXCEEDED, UNIMPLEMENTED, INTERNAL, UNAVAILABLE or DATA_LOSS: the service failed (NOT_FOUND, FAILED_PRECONDITION and the like are answers).',
        unit: 'percentunit',
        min: 0,
        queries: [
          {
            expr: share(
              sumRate([LABELS.rpcMethod], `${R}_count`, j, matches(LABELS.grpcStatus, VALUES.grpcServerError)),
              sumRate([LABELS.rpcMethod], `${R}_count`, j),
            ),
            legend: `{{${LABELS.rpcMethod}}}`,
          },
        ],
      }),
      timeseries({
        title: 'Answers per second by status code',
        description:
          'Every call by its gRPC status (OK, INVALID_ARGUMENT, NOT_FOUND, FAILED_PRECONDITION, UNAVAILABLE, …).',
        unit: 'reqps',
        min: 0,
        stack: true,
        queries: [{ expr: sumRate([LABELS.grpcStatus], `${R}_count`, j), legend: `{{${LABELS.grpcStatus}}}` }],
      }),
      latency('Latency', 'Time to answer, p50 and p99 per method.', 's', R, [LABELS.rpcMethod], j),
    ],
  };
}

function outboxRow(s: Service): Row {
  const j = job(s);
  return {
    title: 'Outbox (events written with their change, relayed to Kafka)',
    panels: [
      timeseries({
        w: 8,
        title: 'Backlog',
        description: 'Events in the outbox not yet on Kafka (the highest any replica reports).',
        unit: 'short',
        min: 0,
        queries: [{ expr: `max(${sel(METRICS.outboxBacklog, j)})`, legend: 'events waiting' }],
      }),
      timeseries({
        w: 8,
        title: 'Oldest unpublished event',
        description:
          'Age of the oldest event waiting: grows while Kafka is unreachable or the relay lease is not held.',
        unit: 's',
        min: 0,
        thresholds: [
          { color: 'green', value: null },
          { color: 'red', value: 300 },
        ],
        queries: [{ expr: `max(${sel(METRICS.outboxOldestAge, j)})`, legend: 'oldest' }],
      }),
      timeseries({
        w: 8,
        title: 'Parked events',
        description: 'Events Kafka refused (outbox_parked, docs/operations.md "Events"): each needs an operator.',
        unit: 'short',
        min: 0,
        queries: [{ expr: `max(${sel(METRICS.outboxParked, j)})`, legend: 'parked' }],
      }),
    ],
  };
}

function consumersRow(s: Service): Row {
  const j = job(s);
  const gt = [LABELS.group, LABELS.topic];
  return {
    title: 'Event consumers (per group and topic)',
    panels: [
      timeseries({
        w: 8,
        title: 'Lag',
        description:
          "Messages on the topic the group has not committed, from the broker (each replica reports the group's figure).",
        unit: 'short',
        min: 0,
        queries: [{ expr: `max${by(gt)} (${sel(METRICS.groupLag, j)})`, legend: legendOf(gt) }],
      }),
      timeseries({
        w: 8,
        title: 'Retries per second',
        description: 'Handlers that failed and will be tried again.',
        unit: 'cps',
        min: 0,
        queries: [{ expr: sumRate(gt, METRICS.retries, j), legend: legendOf(gt) }],
      }),
      timeseries({
        w: 8,
        title: 'Dead-lettered per second',
        description: 'Events given up on and sent to the dead-letter topic (docs/operations.md, "Events").',
        unit: 'cps',
        min: 0,
        queries: [{ expr: sumRate(gt, METRICS.deadLettered, j), legend: legendOf(gt) }],
      }),
    ],
  };
}

/** Those holding a kit `Lease` (its workers, its outbox relay): webhooks' replicas sweep without one (decision 0138). */
const HOLDS_LEASES: readonly Service[] = SERVICES.filter((s) => s !== 'webhooks');

function storeRow(s: Service): Row {
  const j = job(s);
  const co = [LABELS.collection, LABELS.operation];
  const leases = HOLDS_LEASES.includes(s);
  return {
    title: leases ? 'Store and leases' : 'Store',
    panels: [
      timeseries({
        w: 10,
        title: 'Store operations per second',
        description: 'Commands sent to MongoDB, per collection and operation.',
        unit: 'cps',
        min: 0,
        stack: true,
        queries: [{ expr: sumRate(co, METRICS.storeOperations, j), legend: legendOf(co) }],
      }),
      timeseries({
        w: leases ? 7 : 14,
        title: 'Slow store commands per second',
        description:
          'Commands at or over STORE_SLOW_COMMAND_MS (100 ms unless set), per collection and operation; those of a second or more are also logged ("a store command was slow").',
        unit: 'cps',
        min: 0,
        queries: [{ expr: sumRate(co, METRICS.slowCommands, j), legend: legendOf(co) }],
      }),
      ...(leases
        ? [
            timeseries({
              w: 7,
              title: 'Leases held',
              description:
                'Replicas holding each lease (relay, workers): 1 is healthy, 0 means no replica does the work, more than 1 should never last.',
              unit: 'short',
              min: 0,
              queries: [
                { expr: `sum by (${LABELS.lease}) (${sel(METRICS.leaseHeld, j)})`, legend: `{{${LABELS.lease}}}` },
              ],
            }),
          ]
        : []),
    ],
  };
}

function runtimeRow(s: Service): Row {
  const j = job(s);
  return {
    title: 'Runtime (per replica)',
    panels: [
      timeseries({
        title: 'Event-loop utilisation',
        description: 'Share of time the event loop was busy; near 1 the replica is saturated.',
        unit: 'percentunit',
        min: 0,
        max: 1,
        queries: [{ expr: sel(METRICS.eventLoopUtilization, j), legend: '{{instance}}' }],
      }),
      timeseries({
        title: 'Heap used',
        description: 'V8 heap in use, all heap spaces.',
        unit: 'bytes',
        min: 0,
        queries: [{ expr: `sum by (instance) (${sel(METRICS.heapUsed, j)})`, legend: '{{instance}}' }],
      }),
    ],
  };
}

/** What only this service counts. */
function businessRow(s: Service): Row | undefined {
  const j = job(s);
  const perSecond = (title: string, description: string, metric: string, labels: string[]) =>
    timeseries({
      title,
      description,
      unit: 'cps',
      min: 0,
      stack: true,
      queries: [{ expr: sumRate(labels, metric, j), legend: legendOf(labels) }],
    });
  switch (s) {
    case 'leads':
      return {
        title: 'Leads',
        panels: [
          perSecond(
            'Leads per second by outcome',
            'queued and scheduled are accepted for a live call; sandbox_accepted and the refusal reasons are not.',
            METRICS.leads,
            [LABELS.outcome],
          ),
        ],
      };
    case 'telephony':
      return {
        title: 'Calls',
        panels: [
          perSecond(
            'Dials per second by result',
            'dialled, insufficient_credits, or the refusal of the claim.',
            METRICS.dials,
            [LABELS.result],
          ),
          perSecond('Calls ended per second', 'By direction.', METRICS.callsEnded, [LABELS.direction]),
          perSecond(
            'Calls charged per second, in time and late',
            'Each ended call once: late "true" when charged over 60 s after its end, counted as the minute passes (SLO call-charge).',
            METRICS.callsCharged,
            [LABELS.late],
          ),
          perSecond(
            'First attempts per second, in time and late',
            'Each lead once: late "true" when undecided 60 s after becoming dialable, counted as the minute passes (SLO lead-to-dial).',
            METRICS.firstDials,
            [LABELS.late],
          ),
          latency(
            'Lead to first dial',
            'From the moment a lead may be dialled to its first dial, p50 and p99 (SLO lead-to-dial: 99 % within 60 s).',
            's',
            METRICS.dialDelay,
            [],
            j,
          ),
        ],
      };
    case 'billing':
      return {
        title: 'Billing',
        panels: [
          perSecond(
            'Calls billed per second',
            'By outcome (charged, failed, skipped) and direction.',
            METRICS.callsBilled,
            [LABELS.outcome, LABELS.direction],
          ),
          latency(
            'Call end to settled',
            'From a call’s end to its billing outcome, p50 and p99 per outcome.',
            's',
            METRICS.settleDelay,
            [LABELS.outcome],
            j,
          ),
        ],
      };
    case 'webhooks':
      return {
        title: 'Deliveries',
        panels: [
          perSecond(
            'Delivery attempts per second',
            'By outcome (delivered, failed, gone) and whose failure it was (endpoint: the tenant’s; platform: ours, SLO webhook-delivery).',
            METRICS.webhookAttempts,
            [LABELS.outcome, LABELS.fault],
          ),
          perSecond(
            'First attempts per second, in time and late',
            'Each event’s first attempt to an endpoint: late "true" when unsent 60 s after the event (SLO billed-webhook, for call.outbound.billed).',
            METRICS.firstAttempts,
            [LABELS.eventType, LABELS.late],
          ),
          latency(
            'Event to delivery',
            'From the event to its delivery (2xx), p50 and p99 per event type (an endpoint that fails waits for its retries by design).',
            's',
            METRICS.webhookDelay,
            [LABELS.eventType],
            j,
          ),
        ],
      };
    default:
      return undefined;
  }
}

function serviceDashboard(s: Service): GrafanaDashboard {
  const business = businessRow(s);
  return dashboard(
    `voiceapi-${s}`,
    `voiceapi / ${s}`,
    `The ${s} process: requests, outbox, event consumers, store, runtime. Generated by tools/dashboards.ts; edit there.`,
    [s],
    [
      requestRows(s),
      ...(business ? [business] : []),
      ...(WRITES_EVENTS.includes(s) ? [outboxRow(s)] : []),
      ...(READS_EVENTS.includes(s) ? [consumersRow(s)] : []),
      storeRow(s),
      runtimeRow(s),
    ],
  );
}

// ------------------------------------------------------------------------------ overview

function overview(): GrafanaDashboard {
  const slo = (metric: string) => sel(metric, SLO.selector);
  const sloLegend = '{{sloth_slo}} {{route_group}}';
  const all = job(...SERVICES);
  const grpc = job(...SERVICES.filter((s) => s !== 'gateway'));
  const funnel: Query[] = [
    {
      expr: `sum(${rate(METRICS.leads, job('leads'), matches(LABELS.outcome, VALUES.leadAccepted))})`,
      legend: '1 leads accepted',
    },
    { expr: `sum(${rate(METRICS.dials, job('telephony'), is(LABELS.result, VALUES.dialled))})`, legend: '2 dialled' },
    {
      expr: `sum(${rate(METRICS.callsEnded, job('telephony'), is(LABELS.direction, VALUES.outbound))})`,
      legend: '3 outbound calls ended',
    },
    {
      expr: `sum(${rate(METRICS.callsBilled, job('billing'), is(LABELS.outcome, VALUES.charged), is(LABELS.direction, VALUES.outbound))})`,
      legend: '4 charged',
    },
    {
      expr: `sum(${rate(METRICS.webhookAttempts, job('webhooks'), is(LABELS.outcome, VALUES.delivered))})`,
      legend: '5 webhooks delivered',
    },
  ];
  return dashboard(
    'voiceapi-overview',
    'voiceapi / overview',
    'The SLOs and their burn, firing alerts, the call funnel and each service at a glance. Generated by tools/dashboards.ts; edit there.',
    ['slo'],
    [
      {
        title: 'SLOs (observability/slos.yaml)',
        panels: [
          bars({
            title: 'Error budget remaining',
            description:
              'Share of the period’s error budget left, per SLO (Sloth: slo:period_error_budget_remaining:ratio). Below 0 the objective is missed for the period.',
            unit: 'percentunit',
            max: 1,
            queries: [{ expr: slo(SLO.budgetRemaining), legend: sloLegend }],
            thresholds: [
              { color: 'red', value: null },
              { color: 'orange', value: 0 },
              { color: 'green', value: 0.25 },
            ],
          }),
          bars({
            title: 'Burn rate now',
            description:
              'How fast each SLO spends its budget (1: exactly the whole budget over the period; the page alerts fire at 14.4 and 6 over two windows).',
            unit: 'none',
            min: 0,
            queries: [{ expr: slo(SLO.currentBurnRate), legend: sloLegend }],
            thresholds: [
              { color: 'green', value: null },
              { color: 'yellow', value: 1 },
              { color: 'orange', value: 6 },
              { color: 'red', value: 14.4 },
            ],
          }),
          bars({
            title: 'Objectives',
            description: 'Each SLO’s objective (Sloth: slo:objective:ratio).',
            unit: 'percentunit',
            min: 0.9,
            max: 1,
            queries: [{ expr: slo(SLO.objective), legend: sloLegend }],
          }),
          timeseries({
            title: 'Error ratio (5 m and 1 h) against the budget',
            description:
              'Each SLO’s error ratio over 5 minutes and 1 hour, and the ratio its objective allows (1 − objective).',
            unit: 'percentunit',
            min: 0,
            queries: [
              { expr: slo(SLO.errorRatio5m), legend: `5m ${sloLegend}` },
              { expr: slo(SLO.errorRatio1h), legend: `1h ${sloLegend}` },
              { expr: `1 - ${slo(SLO.objective)}`, legend: `allowed ${sloLegend}` },
            ],
          }),
          timeseries({
            title: 'Burn rate',
            description: 'Now (Sloth’s current burn rate) and over the whole period so far.',
            unit: 'none',
            min: 0,
            queries: [
              { expr: slo(SLO.currentBurnRate), legend: `now ${sloLegend}` },
              { expr: slo(SLO.periodBurnRate), legend: `period ${sloLegend}` },
            ],
          }),
          table({
            title: 'Firing alerts',
            description:
              'Every alert firing now in this Prometheus (SLO burn and cause alerts; each names its runbook in docs/operations.md).',
            h: 7,
            hide: ['Time', 'Value', '__name__', 'alertstate'],
            queries: [{ expr: sel(METRICS.alerts, 'alertstate="firing"'), legend: '' }],
          }),
        ],
      },
      {
        title: 'Call funnel: lead → dial → answer → charge → webhook (per second)',
        panels: [
          timeseries({
            w: 24,
            h: 9,
            title: 'Funnel',
            description:
              'Leads accepted for a live call (leads: queued, scheduled), dials placed (telephony: dialled), outbound calls ended (telephony), outbound calls charged (billing: charged), webhook deliveries (webhooks: delivered, every event type). A stage far below the one before it is where leads are lost.',
            unit: 'cps',
            min: 0,
            queries: funnel,
          }),
          latency(
            'Lead to first dial',
            'p50 and p99 (SLO lead-to-dial).',
            's',
            METRICS.dialDelay,
            [],
            job('telephony'),
          ),
          latency(
            'Call end to settled',
            'p50 and p99 of the time from a call’s end to its billing outcome.',
            's',
            METRICS.settleDelay,
            [],
            job('billing'),
          ),
        ],
      },
      {
        title: 'Services at a glance',
        panels: [
          timeseries({
            title: 'Gateway 5xx ratio',
            description: 'Share of the gateway’s answers that were 5xx.',
            unit: 'percentunit',
            min: 0,
            queries: [
              {
                expr: share(
                  `sum(${rate(`${METRICS.httpDuration}_count`, job('gateway'), matches(LABELS.status, VALUES.http5xx))})`,
                  `sum(${rate(`${METRICS.httpDuration}_count`, job('gateway'))})`,
                ),
                legend: 'gateway',
              },
            ],
          }),
          timeseries({
            title: 'gRPC server error ratio per service',
            description:
              'Share of each service’s calls answered with a server-side failure code (see its dashboard for the method).',
            unit: 'percentunit',
            min: 0,
            queries: [
              {
                expr: share(
                  sumRate(
                    ['job'],
                    `${METRICS.rpcDuration}_count`,
                    grpc,
                    matches(LABELS.grpcStatus, VALUES.grpcServerError),
                  ),
                  sumRate(['job'], `${METRICS.rpcDuration}_count`, grpc),
                ),
                legend: '{{job}}',
              },
            ],
          }),
          timeseries({
            w: 8,
            title: 'Oldest unpublished outbox event',
            description: 'Per service (alert OutboxStuck past 5 minutes).',
            unit: 's',
            min: 0,
            queries: [{ expr: `max by (job) (${sel(METRICS.outboxOldestAge, all)})`, legend: '{{job}}' }],
          }),
          timeseries({
            w: 8,
            title: 'Consumer lag',
            description: 'Per service and group.',
            unit: 'short',
            min: 0,
            queries: [
              {
                expr: `sum by (job, ${LABELS.group}) (max by (job, ${LABELS.group}, topic) (${sel(METRICS.groupLag, all)}))`,
                legend: `{{job}} {{${LABELS.group}}}`,
              },
            ],
          }),
          timeseries({
            w: 8,
            title: 'Busiest event loop',
            description: 'The highest event-loop utilisation among each service’s replicas.',
            unit: 'percentunit',
            min: 0,
            max: 1,
            queries: [{ expr: `max by (job) (${sel(METRICS.eventLoopUtilization, all)})`, legend: '{{job}}' }],
          }),
        ],
      },
    ],
  );
}

// ------------------------------------------------------------------------------ API and CLI

/** Every dashboard the chart ships, by file name. */
export function dashboards(): Record<string, GrafanaDashboard> {
  const out: Record<string, GrafanaDashboard> = { 'voiceapi-overview.json': overview() };
  for (const s of SERVICES) out[`voiceapi-${s}.json`] = serviceDashboard(s);
  return out;
}

/** Every query of a dashboard, with its panel's title (rows' nested panels included). */
export function panelQueries(d: GrafanaDashboard): { panel: string; expr: string }[] {
  const walk = (panels: GrafanaPanel[]): { panel: string; expr: string }[] =>
    panels.flatMap((p) => [
      ...(p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr })),
      ...walk(p.panels ?? []),
    ]);
  return walk(d.panels);
}

/** JSON with every object's keys sorted, two-space indented, ending in a newline: the same input always gives the same bytes. */
export function render(d: GrafanaDashboard): string {
  const sorted = (v: unknown): unknown => {
    if (Array.isArray(v)) return v.map(sorted);
    if (v && typeof v === 'object')
      return Object.fromEntries(
        Object.keys(v)
          .sort()
          .map((k) => [k, sorted((v as Record<string, unknown>)[k])]),
      );
    return v;
  };
  return `${JSON.stringify(sorted(d), null, 2)}\n`;
}

/** The files in `dir` that differ from what would be written: changed, missing, or not generated. */
export function stale(dir = DASHBOARD_DIR): string[] {
  const want = dashboards();
  const have = existsSync(dir) ? readdirSync(dir).filter((f) => f.endsWith('.json')) : [];
  const problems: string[] = [];
  for (const [file, d] of Object.entries(want)) {
    const p = path.join(dir, file);
    if (!existsSync(p)) problems.push(`${path.relative(ROOT, p)}: missing`);
    else if (readFileSync(p, 'utf8') !== render(d))
      problems.push(`${path.relative(ROOT, p)}: differs from what tools/dashboards.ts writes`);
  }
  for (const f of have)
    if (!(f in want)) problems.push(`${path.relative(ROOT, path.join(dir, f))}: not made by tools/dashboards.ts`);
  // A query padded with a constant (`or on() vector(0)`) always has data: a metric renamed or never created would
  // read as quiet. Series a panel reads exist from their process's start instead (at 0).
  for (const f of have)
    if (/\bvector\s*\(/.test(readFileSync(path.join(dir, f), 'utf8')))
      problems.push(
        `${path.relative(ROOT, path.join(dir, f))}: pads a query with vector(…): it can never come back empty`,
      );
  return problems;
}

function write(dir: string): void {
  mkdirSync(dir, { recursive: true });
  const want = dashboards();
  for (const [file, d] of Object.entries(want)) writeFileSync(path.join(dir, file), render(d));
  for (const f of readdirSync(dir)) {
    if (f.endsWith('.json') && !(f in want)) {
      rmSync(path.join(dir, f));
      console.log(`removed ${path.relative(ROOT, path.join(dir, f))} (no longer generated)`);
    }
  }
  console.log(`wrote ${Object.keys(want).length} dashboards to ${path.relative(ROOT, dir) || dir}`);
}

if (require.main === module) {
  const args = process.argv.slice(2);
  const at = args.indexOf('--dir');
  const dir = at >= 0 ? path.resolve(args[at + 1] ?? '') : DASHBOARD_DIR;
  const unknown = args.filter((a, i) => a !== '--check' && a !== '--dir' && (at < 0 || i !== at + 1));
  if (unknown.length || (at >= 0 && !args[at + 1])) {
    console.error('usage: dashboards.ts [--check] [--dir DIR]');
    process.exit(2);
  }
  if (args.includes('--check')) {
    const problems = stale(dir);
    for (const p of problems) console.log(p);
    if (problems.length) {
      console.log('run: node --import tsx tools/dashboards.ts');
      process.exit(1);
    }
    console.log(`${Object.keys(dashboards()).length} dashboards in ${path.relative(ROOT, dir) || dir} are current`);
  } else write(dir);
}
