/**
 * Prometheus for `OBSERVE=1 make run` and the alert tests: the Go module proxy's build
 * (scripts/go-tool.sh, into the per-machine cache), on 127.0.0.1, taking every process's
 * metrics over OTLP (`--web.enable-otlp-receiver`) and evaluating the platform's rule files. Its
 * own web pages are missing from the module (no built UI assets); `userAssets` is served at
 * /user/ (the SLO page).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawnProcess } from './children';
import type { LogFn } from './paths';
import { freePorts, tcpOpen } from './ports';
import { waitReady } from './probes';

export const PROMETHEUS_VERSION = 'v0.316.0';
const REPO = path.resolve(__dirname, '../../..');

/** The binary, built on first use (a few minutes, once per checkout). */
export function prometheusBinary(): string {
  return execFileSync(
    'bash',
    [
      path.join(REPO, 'scripts/go-tool.sh'),
      'prometheus',
      'github.com/prometheus/prometheus/cmd/prometheus',
      PROMETHEUS_VERSION,
    ],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  ).trim();
}

export interface PrometheusOptions {
  /** Its TSDB and config (created if missing). */
  dataDir: string;
  ruleFiles: string[];
  /** Served at /user/. */
  userAssets?: string;
  /** 0 or undefined: a free port. */
  port?: number;
  /** Rule evaluation, in seconds (default 15, Prometheus's own; tests use 1). */
  evaluationIntervalS?: number;
  /** Alertmanagers (host:port) its alerts are sent to; none: alerts stay in Prometheus. */
  alertmanagers?: string[];
  /**
   * How often a firing alert is sent again (default 60, Prometheus's own). An alert sent before any
   * Alertmanager was known is sent again only then: scaled windows (tests, SLO_WINDOW_SCALE) want seconds.
   */
  alertResendDelayS?: number;
  /** More of Prometheus's feature flags (--enable-feature), e.g. promql-extended-range-selectors. */
  features?: string[];
  log?: LogFn;
  signal?: AbortSignal;
}

export interface PrometheusHandle {
  url: string;
  /** What a process's OTEL_EXPORTER_OTLP_METRICS_ENDPOINT names. */
  otlpMetricsUrl: string;
  port: number;
  pid: number;
  exited: Promise<string>;
  stop(): Promise<void>;
}

export async function startPrometheus(opts: PrometheusOptions): Promise<PrometheusHandle> {
  const bin = prometheusBinary();
  const dataDir = path.resolve(opts.dataDir);
  fs.mkdirSync(dataDir, { recursive: true });
  const port = opts.port || (await freePorts(1))[0]!;
  if (await tcpOpen(port, 1000))
    throw new Error(`Prometheus's port 127.0.0.1:${port} is taken by another process: stop it, or set PROMETHEUS_PORT`);
  const interval = `${opts.evaluationIntervalS ?? 15}s`;
  const config = path.join(dataDir, 'prometheus.yml');
  // JSON is YAML. Nothing is scraped: every process pushes.
  fs.writeFileSync(
    config,
    JSON.stringify({
      global: { evaluation_interval: interval, scrape_interval: interval },
      rule_files: opts.ruleFiles.map((f) => path.resolve(f)),
      ...(opts.alertmanagers?.length && {
        alerting: { alertmanagers: [{ static_configs: [{ targets: opts.alertmanagers }] }] },
      }),
      otlp: { promote_resource_attributes: ['service.version', 'deployment.environment.name'] },
      // Pushes from many processes arrive a little out of order (the Prometheus OTLP guide's setting).
      storage: { tsdb: { out_of_order_time_window: '30m' } },
    }),
  );
  const url = `http://127.0.0.1:${port}`;
  const proc = spawnProcess(
    'prometheus',
    bin,
    [
      `--config.file=${config}`,
      `--storage.tsdb.path=${path.join(dataDir, 'tsdb')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--web.enable-otlp-receiver',
      // A counter's start time (OTLP carries it) becomes a zero sample: a process's first increments
      // count in rate(), and an SLO's two counters born a moment apart do not read as errors.
      `--enable-feature=${['created-timestamp-zero-ingestion', ...(opts.features ?? [])].join(',')}`,
      '--log.level=warn',
      ...(opts.alertResendDelayS ? [`--rules.alert.resend-delay=${opts.alertResendDelayS}s`] : []),
      ...(opts.userAssets ? [`--web.user-assets=${path.resolve(opts.userAssets)}`] : []),
    ],
    { log: opts.log, cwd: dataDir },
  );
  await waitReady(proc, 'Prometheus /-/ready', 60_000, async () => (await fetch(`${url}/-/ready`)).ok, opts.signal);
  return {
    url,
    otlpMetricsUrl: `${url}/api/v1/otlp/v1/metrics`,
    port,
    pid: proc.pid,
    exited: proc.exited,
    stop: proc.stop,
  };
}
