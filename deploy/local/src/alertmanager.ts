/**
 * Alertmanager for `OBSERVE=1 make run` and the alert tests: v0.35.0 from the Go module proxy
 * (scripts/alertmanager.sh, into the per-machine cache), on 127.0.0.1, loaded with the shipped
 * configuration (charts/platform/files/alertmanager/alertmanager.yaml) with only its receivers'
 * URLs set and, for tests, its timings divided. Clustering is off: one instance.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
import { spawnProcess } from './children';
import type { LogFn } from './paths';
import { freePorts, tcpOpen } from './ports';
import { waitReady } from './probes';

const REPO = path.resolve(__dirname, '../../..');
export const ALERTMANAGER_CONFIG = path.join(REPO, 'charts/platform/files/alertmanager/alertmanager.yaml');

/** The binary (and amtool beside it), built on first use (about a minute, once per machine). */
export function alertmanagerBinary(): string {
  return execFileSync('bash', [path.join(REPO, 'scripts/alertmanager.sh'), 'alertmanager'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
}

export interface AlertReceivers {
  /** Where pages and tickets are posted (ALERTS_WEBHOOK_URL); unset: they reach no one. */
  webhookUrl?: string;
  /** Where the Watchdog is posted every few minutes (ALERTS_WATCHDOG_URL); unset: nowhere. */
  watchdogUrl?: string;
  /** Divides every wait and repeat of the routes (SLO_WINDOW_SCALE; tests). Default 1. */
  timeScale?: number;
}

const MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

function scaled(duration: string, scale: number): string {
  const parts = [...duration.matchAll(/(\d+)(ms|s|m|h|d)/g)];
  if (!parts.length || parts.map((p) => p[0]).join('') !== duration)
    throw new Error(`unsupported duration "${duration}" in ${ALERTMANAGER_CONFIG}`);
  const ms = parts.reduce((sum, p) => sum + Number(p[1]) * MS[p[2]!]!, 0);
  return `${Math.max(0, Math.round(ms / scale))}ms`;
}

interface Route {
  group_wait?: string;
  group_interval?: string;
  repeat_interval?: string;
  routes?: Route[];
}

interface Receiver {
  name: string;
  webhook_configs?: { url?: string }[];
}

/**
 * The shipped configuration as it runs here: the page and ticket receivers post to `webhookUrl`,
 * the watchdog to `watchdogUrl`; a receiver without a URL keeps no webhook (it receives, and
 * sends nowhere). Nothing else changes, so what a test proves of it holds for the chart's copy.
 */
export function alertmanagerConfig(opts: AlertReceivers): string {
  const config = parse(fs.readFileSync(ALERTMANAGER_CONFIG, 'utf8')) as {
    route: Route;
    receivers: Receiver[];
  };
  const urls: Record<string, string | undefined> = {
    page: opts.webhookUrl,
    ticket: opts.webhookUrl,
    watchdog: opts.watchdogUrl,
  };
  for (const r of config.receivers) {
    if (!r.webhook_configs) continue;
    const url = urls[r.name];
    if (url) for (const w of r.webhook_configs) w.url = url;
    else delete r.webhook_configs;
  }
  const scale = opts.timeScale ?? 1;
  if (scale !== 1) {
    const walk = (route: Route): void => {
      for (const key of ['group_wait', 'group_interval', 'repeat_interval'] as const)
        if (route[key]) route[key] = scaled(route[key], scale);
      route.routes?.forEach(walk);
    };
    walk(config.route);
  }
  return stringify(config);
}

export interface AlertmanagerOptions extends AlertReceivers {
  /** Its state (silences, notification log) and config (created if missing). */
  dataDir: string;
  /** The configuration to load instead of the shipped one rendered with these receivers (tests' variants). */
  config?: string;
  /** 0 or undefined: a free port. */
  port?: number;
  /**
   * Origins (scheme://host:port) whose pages a browser lets read its API (`--web.cors.origin`):
   * the Prometheus serving the SLO page, which reads the routed alerts from here. None: no CORS
   * headers, so only same-origin pages and clients outside a browser read it.
   */
  corsOrigins?: string[];
  log?: LogFn;
  signal?: AbortSignal;
}

export interface AlertmanagerHandle {
  url: string;
  /** What Prometheus's alerting section names: host:port. */
  target: string;
  port: number;
  pid: number;
  exited: Promise<string>;
  stop(): Promise<void>;
}

/** `--web.cors.origin`'s value (a regex Alertmanager anchors at both ends) allowing exactly these origins. */
function corsOriginPattern(origins: string[]): string {
  return origins
    .map((o) => {
      const origin = new URL(o).origin;
      if (origin === 'null') throw new Error(`not an http(s) origin: ${o}`);
      return origin.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    })
    .join('|');
}

export async function startAlertmanager(opts: AlertmanagerOptions): Promise<AlertmanagerHandle> {
  const bin = alertmanagerBinary();
  const dataDir = path.resolve(opts.dataDir);
  fs.mkdirSync(dataDir, { recursive: true });
  const port = opts.port || (await freePorts(1))[0]!;
  if (await tcpOpen(port, 1000))
    throw new Error(
      `Alertmanager's port 127.0.0.1:${port} is taken by another process: stop it, or set ALERTMANAGER_PORT`,
    );
  const config = path.join(dataDir, 'alertmanager.yml');
  fs.writeFileSync(config, opts.config ?? alertmanagerConfig(opts));
  const target = `127.0.0.1:${port}`;
  const url = `http://${target}`;
  const proc = spawnProcess(
    'alertmanager',
    bin,
    [
      `--config.file=${config}`,
      `--storage.path=${path.join(dataDir, 'data')}`,
      `--web.listen-address=${target}`,
      // One instance: no gossip port to open.
      '--cluster.listen-address=',
      '--log.level=warn',
      ...(opts.corsOrigins?.length ? [`--web.cors.origin=${corsOriginPattern(opts.corsOrigins)}`] : []),
    ],
    { log: opts.log, cwd: dataDir },
  );
  await waitReady(proc, 'Alertmanager /-/ready', 60_000, async () => (await fetch(`${url}/-/ready`)).ok, opts.signal);
  return { url, target, port, pid: proc.pid, exited: proc.exited, stop: proc.stop };
}
