import { spawn, type ChildProcess } from 'node:child_process';
import { appendFileSync, createWriteStream, mkdirSync } from 'node:fs';
import { freePorts, processNodeOptions } from '@voiceapi/local-infra';
import path from 'node:path';
import { eventually } from './wait';

export const ROOT = path.resolve(__dirname, '../..');

/** A free port on 127.0.0.1 for a process under test (local-infra's `freePorts`: below the ephemeral range). */
export async function freePort(): Promise<number> {
  return (await freePorts(1))[0]!;
}

/** A pino line at error or fatal level, or what Node prints when a process dies of an exception. */
const ERROR_LINE = /"level":(50|60)\b|^\s*(Uncaught|\w*Error:)/;

function noteError(suite: string, processName: string, line: string): void {
  const file = process.env.TEST_ERROR_LOG;
  if (!file) return;
  try {
    appendFileSync(file, `${JSON.stringify({ suite, process: processName, line: line.slice(0, 2_000) })}\n`);
  } catch {
    /* the run is over */
  }
}

export interface Proc {
  name: string;
  child: ChildProcess;
  output: () => string;
  /** SIGTERM and wait for exit (SIGKILL after 15 s). */
  stop(): Promise<number | null>;
}

/** Starts one of the project's built processes (`node --require telemetry dist/main.js`). */
/** Where `BENCH_PROFILE`'s processes write their CPU profiles (see test/bench/profiles.ts). */
export const PROFILE_DIR = path.resolve(
  process.env.BENCH_PROFILE_DIR ?? path.join(ROOT, '.data/profiles', new Date().toISOString().replace(/[:.]/g, '-')),
);
const profiled = (name: string) =>
  (process.env.BENCH_PROFILE ?? '').split(',').some((n) => n !== '' && name.startsWith(n));

/** The processes started here and still running. */
const running = new Set<ChildProcess>();
let stopsOnSignal = false;

/**
 * A benchmark stopped by Ctrl-C or SIGTERM stops the processes it started (they would otherwise
 * outlive it, with nobody to stop them). Under jest, jest and the global teardown do that.
 */
function stopChildrenOnSignal(): void {
  if (stopsOnSignal || process.env.JEST_WORKER_ID !== undefined) return;
  stopsOnSignal = true;
  let stopping = false;
  const onSignal = (signal: 'SIGINT' | 'SIGTERM') => {
    // Another Ctrl-C while they stop changes nothing: they are stopped all the same.
    if (stopping) return;
    stopping = true;
    const children = [...running];
    for (const c of children) c.kill('SIGTERM');
    const exited = children.map(
      (c) => new Promise((r) => (c.exitCode !== null || c.signalCode !== null ? r(undefined) : c.once('exit', r))),
    );
    // Their own shutdown takes a few seconds; whatever still runs after ten is killed. The local
    // store and Kafka are stopped by their own exit hook (deploy/local) when this process exits.
    void Promise.race([Promise.all(exited), new Promise((r) => setTimeout(r, 10_000))]).then(() => {
      for (const c of running) c.kill('SIGKILL');
      process.exit(signal === 'SIGINT' ? 130 : 143);
    });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
}

/** `root`: the checkout whose build runs (another release's, for the mixed-version test); default this one. */
export function startProcess(
  name: string,
  entry: string,
  env: Record<string, string>,
  nodeArgs: string[] = [],
  root = ROOT,
): Proc {
  if (profiled(name)) nodeArgs = [...nodeArgs, '--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`];
  stopChildrenOnSignal();
  const child = spawn(process.execPath, [...nodeArgs, '--require', '@voiceapi/kit/telemetry', path.join(root, entry)], {
    cwd: root,
    env: { ...process.env, NODE_OPTIONS: processNodeOptions(), LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const suite = path.relative(
    ROOT,
    (globalThis as { expect?: { getState(): { testPath?: string } } }).expect?.getState().testPath ?? '',
  );
  let partial = '';
  const keep = (b: Buffer) => {
    out = (out + b.toString()).slice(-20_000);
    // Error-level lines go to the run's error log, which the summary reporter prints for failed suites.
    const lines = (partial + b.toString()).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) if (ERROR_LINE.test(line)) noteError(suite, name, line);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  // TEST_LOG_DIR keeps every process's whole output (the harness otherwise keeps its last 20 kB for errors).
  if (process.env.TEST_LOG_DIR) {
    mkdirSync(process.env.TEST_LOG_DIR, { recursive: true });
    const file = createWriteStream(path.join(process.env.TEST_LOG_DIR, `${name}-${child.pid}.log`));
    child.stdout?.pipe(file, { end: false });
    child.stderr?.pipe(file, { end: false });
  }
  running.add(child);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  void exited.then(() => running.delete(child));
  return {
    name,
    child,
    output: () => out,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** Until `check` answers true (a check that throws counts as not yet); `proc`'s exit fails the wait at once. */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  timeoutMs = 30_000,
  proc?: Proc,
): Promise<void> {
  await eventually(what, check, timeoutMs, { retryErrors: true, proc });
}
