/**
 * CPU profiles of bench processes. `BENCH_PROFILE=billing,telephony` makes the harness start those
 * processes with `--cpu-prof` into `BENCH_PROFILE_DIR` (default `.data/profiles/<time>`); at the end
 * the bench prints the functions with the most self time of each profile (open the .cpuprofile
 * files in DevTools or speedscope for the whole picture).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { PROFILE_DIR, ROOT } from '../harness/processes';

interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  /** Microseconds on the machine's monotonic clock (the one `process.hrtime` reads). */
  startTime: number;
  timeDeltas: number[];
}

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}

/** Now on the monotonic clock the profiles' sample times use, for `summarizeProfiles`'s `fromUs`. */
export const monotonicUs = (): number => Number(process.hrtime.bigint() / 1000n);

/**
 * The `top` functions by self time of every .cpuprofile in `dir`, as printable text; with `fromUs`
 * (from `monotonicUs`), only the samples taken after it (a measured window, without start-up), and
 * with `toUs` only those before that.
 */
export function summarizeProfiles(dir: string, top = 40, fromUs?: number, toUs?: number): string {
  let out = '';
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as Profile;
    if (fromUs !== undefined) {
      let t = profile.startTime;
      profile.samples = profile.samples.filter(
        (_, i) => (t += profile.timeDeltas[i]!) >= fromUs && (toUs === undefined || t <= toUs),
      );
    }
    const byId = new Map(profile.nodes.map((n) => [n.id, n]));
    const self = new Map<string, number>();
    for (const id of profile.samples) {
      const f = byId.get(id)!.callFrame;
      const where = `${f.functionName || '(anonymous)'} ${f.url.replace(/^.*node_modules\//, '').replace(ROOT, '')}:${f.lineNumber + 1}`;
      self.set(where, (self.get(where) ?? 0) + 1);
    }
    const total = profile.samples.length;
    const byPackage = new Map<string, number>();
    for (const id of profile.samples) {
      const f = byId.get(id)!.callFrame;
      const pkg = packageOf(f.url, f.functionName);
      byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + 1);
    }
    out += `\n${path.join(dir, file)}: ${total} samples; self time by package: `;
    out += [...byPackage]
      .sort((a, b) => b[1] - a[1])
      .slice(0, 12)
      .map(([p, n]) => `${p} ${((n / total) * 100).toFixed(1)} %`)
      .join(', ');
    out += '\ntop self time:\n';
    for (const [where, n] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top))
      out += `${((n / total) * 100).toFixed(1).padStart(5)}%  ${where}\n`;
  }
  return out;
}

/** Where a frame's code lives: an npm package, one of ours, Node itself, or the VM's own work. */
function packageOf(url: string, fn: string): string {
  const dep = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (dep) return dep[1]!;
  if (url.startsWith('node:')) return 'node';
  const ours = /\/(services\/[^/]+|gateway)\//.exec(url);
  if (ours) return ours[1]!;
  return url === '' ? fn || '(native)' : url;
}

/**
 * `BENCH_PERF_STORE=1`: samples the store (a native process) with Linux `perf` while `during` runs,
 * and answers the symbols with the most self time (`perf report`), or why there is no profile.
 */
export async function perfProfile<T>(
  pid: number | undefined,
  name: string,
  during: () => Promise<T>,
): Promise<{ result: T; report: string }> {
  if (!process.env.BENCH_PERF_STORE || pid === undefined) return { result: await during(), report: '' };
  mkdirSync(PROFILE_DIR, { recursive: true });
  const data = path.join(PROFILE_DIR, `${name}.perf.data`);
  const perf = spawn('perf', ['record', '-F', '499', '-g', '-p', String(pid), '-o', data], { stdio: 'ignore' });
  const ended = new Promise((r) => perf.once('exit', r));
  try {
    return { result: await during(), report: await perfTop(perf, ended, data) };
  } catch (err) {
    perf.kill('SIGINT');
    throw err;
  }
}

async function perfTop(perf: ChildProcess, ended: Promise<unknown>, data: string): Promise<string> {
  perf.kill('SIGINT');
  await ended;
  try {
    const out = execFileSync(
      'perf',
      ['report', '-i', data, '--stdio', '--no-children', '--sort', 'dso,symbol', '--percent-limit', '0.7'],
      { maxBuffer: 64 * 1024 * 1024, stdio: ['ignore', 'pipe', 'ignore'] },
    ).toString();
    // Only the top-level lines (the call chains under them are in the file, for `perf report -i`).
    return out
      .split('\n')
      .filter((l) => /^\s+\d+\.\d+%/.test(l))
      .join('\n');
  } catch (err) {
    return `no perf report: ${(err as Error).message.split('\n')[0]}`;
  }
}
