import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startAlertmanager as startServer, type AlertReceivers } from '@voiceapi/local-infra';

/** What Alertmanager's webhook receiver posts (its payload version 4), as far as tests read it. */
export interface Notification {
  receiver: string;
  status: 'firing' | 'resolved';
  alerts: { status: string; labels: Record<string, string>; annotations: Record<string, string> }[];
  groupLabels: Record<string, string>;
  commonLabels: Record<string, string>;
}

export interface Alertmanager {
  url: string;
  /** host:port, for Prometheus's alerting section. */
  target: string;
  /** Posts alerts as Prometheus does (API v2), firing from now (until `endsAt`, when given). */
  post(
    alerts: { labels: Record<string, string>; annotations?: Record<string, string>; endsAt?: string }[],
  ): Promise<void>;
  output(): string;
  stop(): Promise<void>;
}

/**
 * local-infra's Alertmanager (as `OBSERVE=1 make run` starts it) with a throwaway state directory:
 * the shipped configuration with these receivers, or `config` as given; on `port` (default: a free
 * one), its API readable from the pages of `corsOrigins` (the SLO page's Prometheus).
 */
export async function startAlertmanager(
  opts: AlertReceivers & { config?: string; port?: number; corsOrigins?: string[] },
): Promise<Alertmanager> {
  const dir = mkdtempSync(path.join(tmpdir(), 'voiceapi-alertmanager-'));
  let out = '';
  const server = await startServer({
    ...opts,
    dataDir: dir,
    log: (line) => void (out = `${out}${line}\n`.slice(-20_000)),
  });
  return {
    url: server.url,
    target: server.target,
    post: async (alerts) => {
      const res = await fetch(`${server.url}/api/v2/alerts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(alerts.map((a) => ({ ...a, startsAt: new Date().toISOString() }))),
      });
      if (!res.ok) throw new Error(`Alertmanager refused the alerts: ${res.status} ${await res.text()}`);
    },
    output: () => out,
    stop: async () => {
      await server.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
