import { existsSync, readFileSync } from 'node:fs';
import type { StoreOpCounts } from '@voiceapi/kit/mongo';

export type StoreOpsByProcess = Record<string, StoreOpCounts>;

const read = (file: string): { seq: number; pid: number; ops: StoreOpCounts } | undefined => {
  try {
    return existsSync(file)
      ? (JSON.parse(readFileSync(file, 'utf8')) as { seq: number; pid: number; ops: StoreOpCounts })
      : undefined;
  } catch {
    return undefined; // being replaced right now: read again
  }
};

/**
 * Asks each running process for its store-operation counts (SIGUSR2, kit `StoreOpCounter`) and
 * waits for each answer. A process that has exited is left out.
 */
export async function readStoreOps(
  procs: { name: string; pid: number | undefined; file: string }[],
): Promise<StoreOpsByProcess> {
  const out: StoreOpsByProcess = {};
  await Promise.all(
    procs.map(async ({ name, pid, file }) => {
      if (pid === undefined) return;
      // A restarted process counts from zero again: only this process's own answers count.
      const prior = read(file);
      const before = prior?.pid === pid ? prior.seq : 0;
      try {
        process.kill(pid, 'SIGUSR2');
      } catch {
        return; // exited
      }
      const until = Date.now() + 5_000;
      for (;;) {
        const now = read(file);
        if (now && now.pid === pid && now.seq > before) {
          out[name] = now.ops;
          return;
        }
        if (Date.now() > until) throw new Error(`${name} (pid ${pid}) did not report its store operations within 5 s`);
        await new Promise((r) => setTimeout(r, 20));
      }
    }),
  );
  return out;
}

/** Operations between two readings, summed per process (and in all under `total`). */
export function storeOpsDelta(
  before: StoreOpsByProcess,
  after: StoreOpsByProcess,
): {
  total: number;
  byProcess: Record<string, number>;
  byCollection: Record<string, number>;
  byOperation: Record<string, number>;
} {
  const byProcess: Record<string, number> = {};
  const byCollection: Record<string, number> = {};
  const byOperation: Record<string, number> = {};
  let total = 0;
  for (const [proc, colls] of Object.entries(after)) {
    for (const [coll, ops] of Object.entries(colls)) {
      for (const [op, n] of Object.entries(ops)) {
        const d = n - (before[proc]?.[coll]?.[op] ?? 0);
        if (d === 0) continue;
        total += d;
        const p = proc.replace(/-\d+$/, '');
        byProcess[p] = (byProcess[p] ?? 0) + d;
        byCollection[`${p}.${coll}`] = (byCollection[`${p}.${coll}`] ?? 0) + d;
        byOperation[`${p}.${coll}.${op}`] = (byOperation[`${p}.${coll}.${op}`] ?? 0) + d;
      }
    }
  }
  return { total, byProcess, byCollection, byOperation };
}

/**
 * One line for a report: store operations per business operation, then the processes and the
 * collections that spend most of them, e.g. "6.1 per lead (leads 4.0: contacts 2.0, outbox 1.0;
 * gateway 1.1: …)".
 */
export function perOperation(delta: ReturnType<typeof storeOpsDelta>, count: number, unit: string): string {
  if (count <= 0) return `no ${unit} to divide by`;
  const f = (n: number) => (n / count).toFixed(n / count >= 10 ? 0 : 1);
  // What rounds to nothing per operation (background polls of the same seconds) is left out; the
  // four busiest collections of each process are named (`BENCH_OPS_DETAIL=all`: every one, with
  // its operations: find, insert, update, findAndModify, getMore…).
  const visible = (n: number) => n / count >= 0.05;
  const detailed = process.env.BENCH_OPS_DETAIL === 'all';
  const operationsOf = (coll: string) =>
    Object.entries(delta.byOperation)
      .filter(([k]) => k.startsWith(`${coll}.`))
      .map(([k, m]) => `${k.slice(coll.length + 1)} ${f(m)}`)
      .join(', ');
  const procs = Object.entries(delta.byProcess)
    .filter(([, n]) => visible(n))
    .sort((a, b) => b[1] - a[1]);
  const parts = procs.map(([p, n]) => {
    const colls = Object.entries(delta.byCollection)
      .filter(([k, m]) => k.startsWith(`${p}.`) && visible(m))
      .sort((a, b) => b[1] - a[1])
      .slice(0, detailed ? undefined : 4)
      .map(([k, m]) => `${k.slice(p.length + 1)} ${f(m)}${detailed ? ` (${operationsOf(k)})` : ''}`);
    return colls.length > 0 ? `${p} ${f(n)}: ${colls.join(', ')}` : `${p} ${f(n)}`;
  });
  return `${f(delta.total)} per ${unit} (${parts.join('; ')})`;
}
