import { execFile, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';

// kubectl and helm against the local cluster (scripts/cluster.sh), for the cluster suite. The make
// target gives KUBECONFIG, PATH (the cluster's kubectl), HELM and CLUSTER_NODE_IP.

const run = promisify(execFile);
export const ROOT = path.resolve(__dirname, '../..');
export const NAMESPACE = 'voiceapi';

function need(name: string): string {
  const v = process.env[name];
  if (!v)
    throw new Error(`${name} is not set: run this suite with 'make cluster-test' (it starts the cluster and sets it)`);
  return v;
}

export const nodeIp = () => need('CLUSTER_NODE_IP');
/** The Prometheus operator's PrometheusRule CRD (scripts/prometheus-operator-crd.sh), applied before the umbrella is installed. */
export const prometheusRuleCrd = () => need('PROMETHEUS_RULE_CRD');
/** Its AlertmanagerConfig CRD, likewise. */
export const alertmanagerConfigCrd = () => need('ALERTMANAGER_CONFIG_CRD');

async function tool(bin: string, args: string[], timeoutMs: number): Promise<string> {
  try {
    const { stdout } = await run(bin, args, { timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024, env: process.env });
    return stdout;
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${path.basename(bin)} ${args.join(' ')} failed: ${(e.stderr || e.message).trim()}`);
  }
}

export const kubectl = (args: string[], timeoutMs = 120_000) => tool('kubectl', ['-n', NAMESPACE, ...args], timeoutMs);
export const helm = (args: string[], timeoutMs = 600_000) => tool(need('HELM'), [...args, '-n', NAMESPACE], timeoutMs);

export async function kubectlJson<T = any>(args: string[]): Promise<T> {
  return JSON.parse(await kubectl([...args, '-o', 'json'])) as T;
}

export interface Pod {
  metadata: { name: string; labels: Record<string, string>; deletionTimestamp?: string };
  spec: { nodeName?: string; terminationGracePeriodSeconds?: number; containers: { name: string; image: string }[] };
  status: {
    phase: string;
    conditions?: { type: string; status: string }[];
    containerStatuses?: { name: string; ready: boolean; restartCount: number; image: string }[];
  };
}

export const pods = async (selector?: string): Promise<Pod[]> =>
  (await kubectlJson<{ items: Pod[] }>(['get', 'pods', ...(selector ? ['-l', selector] : [])])).items;
export const ready = (p: Pod) =>
  !p.metadata.deletionTimestamp && (p.status.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');
export const serviceOf = (p: Pod) => p.metadata.labels['app.kubernetes.io/name']!;

/**
 * What went wrong in the namespace, for a failed install or wait: every pod that is not ready, its
 * state, recent events, and the last log lines of its containers (the previous run's too).
 */
export async function explain(): Promise<string> {
  const out: string[] = [];
  try {
    for (const p of await pods()) {
      if (ready(p)) continue;
      out.push(
        `--- pod ${p.metadata.name}: ${p.status.phase}, ${JSON.stringify(p.status.containerStatuses?.map((c) => ({ ready: c.ready, restarts: c.restartCount })) ?? [])}`,
      );
      for (const previous of [false, true]) {
        const logs = await kubectl([
          'logs',
          p.metadata.name,
          '--all-containers',
          '--tail=20',
          ...(previous ? ['--previous'] : []),
        ]).catch(() => '');
        if (logs.trim()) out.push(`${previous ? 'previous run' : 'log'}:\n${logs.trim()}`);
      }
      const events = await kubectl([
        'get',
        'events',
        '--field-selector',
        `involvedObject.name=${p.metadata.name}`,
        '-o',
        'custom-columns=REASON:.reason,MESSAGE:.message',
        '--no-headers',
      ]).catch(() => '');
      if (events.trim()) out.push(`events:\n${events.trim().split('\n').slice(-8).join('\n')}`);
    }
  } catch (err) {
    out.push(`(could not read the pods: ${(err as Error).message})`);
  }
  return out.join('\n') || '(every pod is ready)';
}

/** Runs `step`; when it throws, the error carries explain()'s report. */
export async function explained<T>(what: string, step: () => Promise<T>): Promise<T> {
  try {
    return await step();
  } catch (err) {
    throw new Error(`${what} failed: ${(err as Error).message}\n${await explain()}`);
  }
}

/** A values file for one service's own release, from the umbrella's local values: `global` plus that service's block. */
export function serviceValues(umbrellaValues: Record<string, any>, service: string, dir: string): string {
  const file = path.join(dir, `${service}-values.json`);
  fs.writeFileSync(file, JSON.stringify({ global: umbrellaValues.global ?? {}, ...(umbrellaValues[service] ?? {}) }));
  return file;
}

/**
 * Follows a pod's log until the pod is gone; `lines()` answers what it wrote meanwhile. For what a
 * pod said while it stopped (a shutdown step that ran out of time says so at error level).
 */
export function followLog(pod: string): { done: Promise<void>; lines: () => string[]; stop: () => void } {
  const child = spawn('kubectl', ['-n', NAMESPACE, 'logs', '-f', '--tail=0', pod], {
    stdio: ['ignore', 'pipe', 'ignore'],
    env: process.env,
  });
  let text = '';
  child.stdout.on('data', (chunk: Buffer) => (text += chunk.toString()));
  const done = new Promise<void>((resolve) => child.once('close', () => resolve()));
  return { done, lines: () => text.split('\n').filter(Boolean), stop: () => void child.kill() };
}

/** The versions (image tags) the ready pods under `selector` run, sorted. */
export const readyVersions = async (selector: string) =>
  (await pods(selector))
    .filter(ready)
    .map((p) => p.spec.containers[0]!.image.split(':').at(-1)!)
    .sort();

/** Which versions (image tags) a selector's ready pods ran at a moment: when two served side by side. */
export interface VersionSample {
  at: number;
  versions: string[];
}

/** Samples the ready pods' versions under `selector` once a second until `stop()`, which answers the samples. */
export function watchVersions(selector: string): { stop: () => Promise<VersionSample[]> } {
  const samples: VersionSample[] = [];
  let stopping = false;
  const loop = (async () => {
    while (!stopping) {
      const at = Date.now();
      const versions = await readyVersions(selector).catch(() => undefined);
      if (versions) samples.push({ at, versions });
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  })();
  return {
    stop: async () => {
      stopping = true;
      await loop;
      return samples;
    },
  };
}
