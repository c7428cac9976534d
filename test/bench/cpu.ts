/**
 * Where the machine's CPU went during a measured window: each named process's share (user +
 * system, from /proc/<pid>/stat; 100 % is one core) and the machine's whole busy time (/proc/stat),
 * so a throughput figure comes with what was busy while it was measured.
 */
import { readFileSync } from 'node:fs';
import { cpus } from 'node:os';

/** A process's resident memory now, in bytes (VmRSS). */
export const rssBytes = (pid: number): number =>
  Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) * 1024;

/** CPU seconds (user + system) a process has used so far. */
export function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8')
    .replace(/^.*\) /, '')
    .split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (100 Hz)
}

/** Busy CPU seconds of the whole machine so far (every core; idle and iowait left out). */
function machineBusySeconds(): number {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/);
  const n = ticks.map(Number);
  const idle = (n[3] ?? 0) + (n[4] ?? 0);
  return (n.slice(0, 8).reduce((a, b) => a + b, 0) - idle) / 100;
}

export interface CpuShares {
  /** Each process's share of one core over the window. */
  byProcess: Record<string, number>;
  /** The machine's busy share (of one core; the machine has `cores` of them). */
  machine: number;
  cores: number;
  seconds: number;
}

/** Starts measuring the named processes (missing pids are skipped); call the result at the window's end. */
export function cpuWindow(pids: Record<string, number | undefined>): () => CpuShares {
  const named = Object.entries(pids).filter((e): e is [string, number] => e[1] !== undefined);
  const t0 = performance.now();
  const start = new Map(named.map(([name, pid]) => [name, cpuSeconds(pid)]));
  const machine0 = machineBusySeconds();
  return () => {
    const seconds = (performance.now() - t0) / 1000;
    const byProcess = Object.fromEntries(
      named.map(([name, pid]) => [name, (cpuSeconds(pid) - start.get(name)!) / seconds]),
    );
    return { byProcess, machine: (machineBusySeconds() - machine0) / seconds, cores: cpus().length, seconds };
  };
}

/** "the machine 186 % of 200 %: billing 71 %, the store 48 %, …, everything else 12 %", busiest first. */
export function cpuLine(s: CpuShares): string {
  const pct = (x: number) => `${(100 * x).toFixed(0)} %`;
  const parts = Object.entries(s.byProcess).sort((a, b) => b[1] - a[1]);
  const rest = s.machine - parts.reduce((sum, [, x]) => sum + x, 0);
  return `the machine ${pct(s.machine)} of ${s.cores * 100} %: ${[...parts.map(([n, x]) => `${n} ${pct(x)}`), `everything else ${pct(Math.max(0, rest))}`].join(', ')}`;
}

/** The processes of a started system, the store, Kafka and this process (the load generator), by name. */
export function systemPids(
  sys: { services: Record<string, { child: { pid?: number } }>; gateways: { proc: { child: { pid?: number } } }[] },
  infra: { storePid?: number; kafkaPid?: number },
): Record<string, number | undefined> {
  return {
    ...Object.fromEntries(Object.entries(sys.services).map(([name, p]) => [name, p.child.pid])),
    ...Object.fromEntries(sys.gateways.map((g, i) => [i === 0 ? 'gateway' : `gateway ${i + 1}`, g.proc.child.pid])),
    'the store': infra.storePid,
    Kafka: infra.kafkaPid,
    'the load generator': process.pid,
  };
}

/** Each process's CPU milliseconds per business operation over the window (`count` operations in it). */
export function cpuMsPerOperation(s: CpuShares, count: number): Record<string, number> {
  return Object.fromEntries(
    Object.entries(s.byProcess).map(([name, share]) => [name, (share * s.seconds * 1000) / Math.max(1, count)]),
  );
}

/** "212.0 ms in all (the store 80.1, Kafka 40.2, …)", busiest first, what rounds to nothing left out. */
export function cpuPerOperation(s: CpuShares, count: number): string {
  const parts = Object.entries(cpuMsPerOperation(s, count)).sort((a, b) => b[1] - a[1]);
  return `${parts.reduce((n, [, x]) => n + x, 0).toFixed(1)} ms in all (${parts
    .filter(([, x]) => x >= 0.05)
    .map(([n, x]) => `${n} ${x.toFixed(1)}`)
    .join(', ')})`;
}
