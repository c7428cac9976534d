import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, ROOT, waitFor } from './processes';

/** The Prometheus the SLO rules are proven on: the Go module proxy's build (scripts/go-tool.sh). */
export const PROMETHEUS_VERSION = 'v0.316.0';

export function prometheusBinary(): string {
  return execFileSync('bash', [path.join(ROOT, 'scripts/go-tool.sh'), 'prometheus', 'github.com/prometheus/prometheus/cmd/prometheus', PROMETHEUS_VERSION], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
}

export interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

export interface PromAlert {
  labels: Record<string, string>;
  annotations: Record<string, string>;
  state: 'pending' | 'firing';
}

export interface Prometheus {
  url: string;
  /** Where a process's OTLP metric exporter sends (OTEL_EXPORTER_OTLP_METRICS_ENDPOINT). */
  otlpMetricsUrl: string;
  query(expr: string): Promise<Sample[]>;
  alerts(): Promise<PromAlert[]>;
  output(): string;
  stop(): Promise<void>;
}

/**
 * A real Prometheus on loopback taking OTLP metrics (`--web.enable-otlp-receiver`), evaluating the
 * given rule files; `userAssets` is served at /user/ (the SLO page). Its TSDB lives in a temp dir
 * removed on stop.
 */
export async function startPrometheus(opts: { ruleFiles: string[]; userAssets?: string; evaluationIntervalS?: number }): Promise<Prometheus> {
  const bin = prometheusBinary();
  const port = await freePort();
  const dir = mkdtempSync(path.join(tmpdir(), 'voiceapi-prometheus-'));
  const config = path.join(dir, 'prometheus.yml');
  const interval = `${opts.evaluationIntervalS ?? 1}s`;
  writeFileSync(
    config,
    JSON.stringify({
      global: { evaluation_interval: interval, scrape_interval: interval },
      rule_files: opts.ruleFiles,
      // What `make run` and the charts send: every process pushes, nothing is scraped.
      otlp: { promote_resource_attributes: ['service.instance.id', 'service.version'] },
    }),
  );
  const args = [
    `--config.file=${config}`,
    `--storage.tsdb.path=${path.join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--web.enable-otlp-receiver',
    '--log.level=warn',
    ...(opts.userAssets ? [`--web.user-assets=${opts.userAssets}`] : []),
  ];
  const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const keep = (b: Buffer) => void (out = (out + b.toString()).slice(-20_000));
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // A test that throws before its afterAll still leaves no Prometheus behind.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  const url = `http://127.0.0.1:${port}`;
  const api = async <T>(p: string): Promise<T> => {
    const res = await fetch(`${url}${p}`);
    const body = (await res.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`Prometheus ${p}: ${body.error ?? res.status}`);
    return body.data;
  };
  await waitFor(
    'prometheus',
    async () => {
      if (child.exitCode !== null) throw new Error(`prometheus exited:\n${out}`);
      return (await fetch(`${url}/-/ready`)).ok;
    },
    60_000,
  );
  return {
    url,
    otlpMetricsUrl: `${url}/api/v1/otlp/v1/metrics`,
    query: async (expr) => (await api<{ result: Sample[] }>(`/api/v1/query?query=${encodeURIComponent(expr)}`)).result,
    alerts: async () => (await api<{ alerts: PromAlert[] }>('/api/v1/alerts')).alerts,
    output: () => out,
    stop: async () => {
      process.removeListener('exit', killOnExit);
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
