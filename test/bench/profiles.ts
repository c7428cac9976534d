/**
 * CPU profiles of bench processes. `BENCH_PROFILE=billing,telephony` makes the harness start those
 * processes with `--cpu-prof` into `BENCH_PROFILE_DIR` (default `.data/profiles/<time>`); at the end
 * the bench prints the functions with the most self time of each profile (open the .cpuprofile
 * files in DevTools or speedscope for the whole picture).
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../harness/processes';

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
 * (from `monotonicUs`), only the samples taken after it (a measured window, without start-up).
 */
export function summarizeProfiles(dir: string, top = 40, fromUs?: number): string {
  let out = '';
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'))) {
    const profile = JSON.parse(readFileSync(path.join(dir, file), 'utf8')) as Profile;
    if (fromUs !== undefined) {
      let t = profile.startTime;
      profile.samples = profile.samples.filter((_, i) => (t += profile.timeDeltas[i]!) >= fromUs);
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
    for (const [where, n] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) out += `${((n / total) * 100).toFixed(1).padStart(5)}%  ${where}\n`;
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
