import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startPrometheus as startServer } from '@voiceapi/local-infra';

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
  /** An instant query; throws with Prometheus's error when it does not parse or fails. */
  query(expr: string): Promise<Sample[]>;
  alerts(): Promise<PromAlert[]>;
  output(): string;
  stop(): Promise<void>;
}

/**
 * local-infra's Prometheus (as `OBSERVE=1 make run` starts it) with a throwaway TSDB, evaluating
 * the given rule files every `evaluationIntervalS` (default 1 s); `userAssets` is served at /user/.
 */
export async function startPrometheus(opts: {
  ruleFiles: string[];
  userAssets?: string;
  evaluationIntervalS?: number;
  features?: string[];
  /** Alertmanagers (host:port) its alerts are sent to. */
  alertmanagers?: string[];
  /** Seconds before a firing alert is sent again (Prometheus's default 60). */
  alertResendDelayS?: number;
}): Promise<Prometheus> {
  const dir = mkdtempSync(path.join(tmpdir(), 'voiceapi-prometheus-'));
  let out = '';
  const server = await startServer({
    dataDir: dir,
    ruleFiles: opts.ruleFiles,
    ...(opts.userAssets && { userAssets: opts.userAssets }),
    evaluationIntervalS: opts.evaluationIntervalS ?? 1,
    ...(opts.features && { features: opts.features }),
    ...(opts.alertmanagers && { alertmanagers: opts.alertmanagers }),
    ...(opts.alertResendDelayS && { alertResendDelayS: opts.alertResendDelayS }),
    log: (line) => void (out = `${out}${line}\n`.slice(-20_000)),
  });
  const api = async <T>(p: string): Promise<T> => {
    const res = await fetch(`${server.url}${p}`);
    const body = (await res.json()) as { status: string; data: T; error?: string };
    if (body.status !== 'success') throw new Error(`Prometheus ${p}: ${body.error ?? res.status}`);
    return body.data;
  };
  return {
    url: server.url,
    otlpMetricsUrl: server.otlpMetricsUrl,
    query: async (expr) => (await api<{ result: Sample[] }>(`/api/v1/query?query=${encodeURIComponent(expr)}`)).result,
    alerts: async () => (await api<{ alerts: PromAlert[] }>('/api/v1/alerts')).alerts,
    output: () => out,
    stop: async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
