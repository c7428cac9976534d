// Over 300 lines because the rules are generated, scaled for tests and checked in one place: the check reads what the generator and the scaling write.
/**
 * The SLO rules, generated and checked (`make rules`, `make rules-check`).
 *
 *   generate  Sloth turns observability/slos.yaml into charts/platform/files/prometheus/slos.rules.yaml
 *   check     that file is what Sloth makes of slos.yaml today; promtool checks every rule file and
 *             runs the rule unit tests of observability/tests/ (each alert fires on a series showing
 *             its failure and stays quiet on a healthy one)
 *   write DIR [SCALE]   every rule file into DIR, SLO windows divided by SCALE (OBSERVE=1 make run)
 *
 * Sloth, promtool and Prometheus come from the Go module proxy (scripts/go-tool.sh, like helm).
 * `writeRules(dir, { windowScale })` is what the end-to-end tests load: the same SLOs with every
 * window divided by windowScale (SLO_WINDOW_SCALE), and the cause alerts as shipped but for the
 * clocks of those that measure time (`scaleCauseRules`).
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse, stringify } from 'yaml';
import { alertmanagerChecks } from './alert-routes';

const ROOT = path.resolve(__dirname, '..');
export const SLO_SPEC = path.join(ROOT, 'observability/slos.yaml');
const WINDOWS_DIR = path.join(ROOT, 'observability/windows');
export const RULES_DIR = path.join(ROOT, 'charts/platform/files/prometheus');
export const SLO_RULES = path.join(RULES_DIR, 'slos.rules.yaml');
const TESTS_DIR = path.join(ROOT, 'observability/tests');

const TOOLS = {
  sloth: ['github.com/slok/sloth/cmd/sloth', 'v0.16.0'],
  promtool: ['github.com/prometheus/prometheus/cmd/promtool', 'v0.316.0'],
} as const;

export function goTool(name: keyof typeof TOOLS): string {
  const [pkg, version] = TOOLS[name];
  return execFileSync('bash', [path.join(ROOT, 'scripts/go-tool.sh'), name, pkg, version], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
}

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };

/** A Prometheus duration divided by `scale`, in whole seconds (refused when it does not divide). */
export function scaleDuration(d: string, scale: number): string {
  const m = /^(\d+)([smhdw])$/.exec(d);
  if (!m) throw new Error(`unsupported duration "${d}" in ${WINDOWS_DIR}`);
  const seconds = (Number(m[1]) * UNITS[m[2]!]!) / scale;
  if (!Number.isInteger(seconds) || seconds < 1)
    throw new Error(`SLO_WINDOW_SCALE=${scale} does not divide ${d} into whole seconds`);
  return `${seconds}s`;
}

/** A number of seconds as Prometheus writes a duration (and so as Sloth names its rules): 4320 → 1h12m. */
export function promDuration(seconds: number): string {
  let left = seconds;
  let out = '';
  for (const [unit, size] of [
    ['y', 31_536_000],
    ['w', 604_800],
    ['d', 86_400],
    ['h', 3600],
    ['m', 60],
    ['s', 1],
  ] as const) {
    if (left >= size) {
      out += `${Math.floor(left / size)}${unit}`;
      left %= size;
    }
  }
  return out || '0s';
}

/**
 * A query written for the shipped windows, for rules whose windows are divided by `scale`:
 * `slo:sli_error:ratio_rate5m` reads `slo:sli_error:ratio_rate5s` at scale 60.
 */
export function scaledQuery(expr: string, scale: number): string {
  return expr.replace(
    /(slo:sli_error:ratio_rate)(\d+[smhdw])\b/g,
    (_, rule: string, d: string) => rule + promDuration(Number(scaleDuration(d, scale).slice(0, -1))),
  );
}

interface AlertWindows {
  spec: {
    sloPeriod: string;
    page: Record<string, { shortWindow: string; longWindow: string }>;
    ticket: Record<string, { shortWindow: string; longWindow: string }>;
  };
}

/** The windows file with every duration divided by `scale`, written into a fresh directory. */
function scaledWindows(scale: number): { dir: string; period: string } {
  const dir = mkdtempSync(path.join(tmpdir(), 'voiceapi-slo-windows-'));
  let period = '';
  for (const f of readdirSync(WINDOWS_DIR)) {
    const w = parse(readFileSync(path.join(WINDOWS_DIR, f), 'utf8')) as AlertWindows;
    w.spec.sloPeriod = scaleDuration(w.spec.sloPeriod, scale);
    period = w.spec.sloPeriod;
    for (const kind of [w.spec.page, w.spec.ticket]) {
      for (const win of Object.values(kind)) {
        win.shortWindow = scaleDuration(win.shortWindow, scale);
        win.longWindow = scaleDuration(win.longWindow, scale);
      }
    }
    writeFileSync(path.join(dir, f), stringify(w));
  }
  return { dir, period };
}

/** Sloth's rules for observability/slos.yaml; windows divided by `windowScale` (1: as shipped). */
export function generateSloRules(windowScale = 1): string {
  const { dir, period } = windowScale === 1 ? { dir: WINDOWS_DIR, period: '30d' } : scaledWindows(windowScale);
  const out = mkdtempSync(path.join(tmpdir(), 'voiceapi-slo-rules-'));
  try {
    const file = path.join(out, 'slos.rules.yaml');
    execFileSync(
      goTool('sloth'),
      [
        'generate',
        `--input=${SLO_SPEC}`,
        `--out=${file}`,
        `--slo-period-windows-path=${dir}`,
        `--default-slo-period=${period}`,
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    return readFileSync(file, 'utf8');
  } finally {
    rmSync(out, { recursive: true, force: true });
    if (dir !== WINDOWS_DIR) rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Cause alerts that say how long something has been missing or stuck (a silent service, an absent SLI metric, an
 * unpublished event's age): with scaled windows their clock is scaled too, so a fault shows in seconds. Those that
 * read load over a window (rates, saturation, lag) keep their windows: shorter, they would read noise, not a faster
 * clock.
 */
const CLOCKED_CAUSES = new Set(['ServiceSilent', 'SLIMetricAbsent', 'OutboxStuck']);
/** No scaled cause duration under this: twenty pushes at the 1 s export interval of scaled runs, so a busy process is not silent. */
const CAUSE_FLOOR_S = 20;

interface RuleGroups {
  groups: { name: string; rules: { alert?: string; expr: string; for?: string }[] }[];
}

/** The cause rules with the clocks of CLOCKED_CAUSES divided by `scale` (ranges, `for`, age thresholds in seconds). */
export function scaleCauseRules(yaml: string, scale: number): string {
  const scaled = (seconds: number) => Math.max(CAUSE_FLOOR_S, Math.round(seconds / scale));
  const duration = (d: string) => `${scaled(Number(scaleDuration(d, 1).slice(0, -1)))}s`;
  const rules = parse(yaml) as RuleGroups;
  for (const rule of rules.groups.flatMap((g) => g.rules)) {
    if (!rule.alert || !CLOCKED_CAUSES.has(rule.alert)) continue;
    if (rule.for) rule.for = duration(rule.for);
    rule.expr = rule.expr
      .replace(/\[(\d+[smhdw])\]/g, (_, d: string) => `[${duration(d)}]`)
      .replace(/(_seconds\)*\s*>\s*)(\d+)\b/g, (_, lhs: string, n: string) => `${lhs}${scaled(Number(n))}`);
  }
  return stringify(rules);
}

/**
 * Every rule file a Prometheus of this platform loads, SLO windows divided by `windowScale`, and the clocks of the
 * cause alerts that measure time (CLOCKED_CAUSES) likewise.
 */
export function writeRules(dir: string, opts: { windowScale: number }): string[] {
  mkdirSync(dir, { recursive: true });
  const files: string[] = [];
  for (const f of readdirSync(RULES_DIR).filter((n) => n.endsWith('.rules.yaml'))) {
    const from = path.join(RULES_DIR, f);
    const to = path.join(dir, f);
    if (from === SLO_RULES) writeFileSync(to, generateSloRules(opts.windowScale));
    else if (opts.windowScale !== 1) writeFileSync(to, scaleCauseRules(readFileSync(from, 'utf8'), opts.windowScale));
    else copyFileSync(from, to);
    files.push(to);
  }
  return files;
}

function check(): void {
  const failures: string[] = [];
  const want = generateSloRules();
  if (readFileSync(SLO_RULES, 'utf8') !== want)
    failures.push(
      `${path.relative(ROOT, SLO_RULES)} is not what Sloth makes of observability/slos.yaml: run 'make rules' and commit`,
    );
  const promtool = goTool('promtool');
  const ruleFiles = readdirSync(RULES_DIR)
    .filter((n) => n.endsWith('.rules.yaml'))
    .map((n) => path.join(RULES_DIR, n));
  const tests = readdirSync(TESTS_DIR)
    .filter((n) => n.endsWith('.test.yaml'))
    .map((n) => path.join(TESTS_DIR, n));
  for (const [what, args] of [
    ['promtool check rules', ['check', 'rules', ...ruleFiles]],
    ['promtool test rules', ['test', 'rules', ...tests]],
  ] as const) {
    try {
      process.stdout.write(
        execFileSync(promtool, args, { encoding: 'utf8', cwd: TESTS_DIR, stdio: ['ignore', 'pipe', 'pipe'] }),
      );
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string };
      failures.push(`${what} failed:\n${e.stdout ?? ''}${e.stderr ?? ''}`);
    }
  }
  const alerts = ruleAlerts(ruleFiles);
  failures.push(
    ...unitTestedAlerts(alerts, tests),
    ...everyDeployableWatched(alerts),
    ...everySliWatched(alerts),
    ...alertmanagerChecks(alerts),
  );
  if (failures.length) {
    console.error(failures.join('\n\n'));
    process.exit(1);
  }
  console.log(
    `rules-check: ${ruleFiles.length} rule files valid, ${tests.length} unit test files pass, every alert tested firing and quiet and routed; Alertmanager's configuration valid and its routes as tested`,
  );
}

interface AlertRule {
  alert?: string;
  expr?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

/** Every alerting rule of the rule files, by name (an SLO's page and ticket rules share one). */
function ruleAlerts(ruleFiles: string[]): Map<string, AlertRule> {
  const alerts = new Map<string, AlertRule>();
  for (const f of ruleFiles)
    for (const g of (parse(readFileSync(f, 'utf8')) as { groups: { rules: AlertRule[] }[] }).groups)
      for (const r of g.rules) if (r.alert) alerts.set(r.alert, r);
  return alerts;
}

/**
 * ServiceSilent names every deployable of services/manifest.json, one by one (a job that never
 * reported has no series a pattern could miss), and no other.
 */
function everyDeployableWatched(alerts: Map<string, AlertRule>): string[] {
  const manifest = JSON.parse(readFileSync(path.join(ROOT, 'services/manifest.json'), 'utf8')) as {
    processes: { name: string }[];
  };
  const want = manifest.processes.map((p) => `voiceapi/${p.name}`).sort();
  const expr = alerts.get('ServiceSilent')?.expr ?? '';
  const named = [...expr.matchAll(/absent_over_time\(target_info\{job="([^"]+)"\}/g)].map((m) => m[1]!).sort();
  return named.join() === want.join()
    ? []
    : [`ServiceSilent names ${named.join(', ') || 'no job'}; the manifest's deployables are ${want.join(', ')}`];
}

/** SLIMetricAbsent names every metric observability/slos.yaml reads (a histogram by its count), and no other. */
function everySliWatched(alerts: Map<string, AlertRule>): string[] {
  const series = (text: string) =>
    new Set([...text.matchAll(/\b((?:voiceapi|http)_[a-z0-9_]+?)(?:_bucket|_count)?(?=[{[\s])/g)].map((m) => m[1]!));
  const read = [...series(readFileSync(SLO_SPEC, 'utf8'))].sort();
  const watched = [...series(alerts.get('SLIMetricAbsent')?.expr ?? '')].sort();
  return read.join() === watched.join()
    ? []
    : [`SLIMetricAbsent watches ${watched.join(', ') || 'nothing'}; observability/slos.yaml reads ${read.join(', ')}`];
}

/** The one alert that fires always, by design (it proves the pipeline alive): never tested quiet. */
const ALWAYS_FIRING = 'Watchdog';

/**
 * Every alert a rule file defines has a unit test in which it fires and one in which it is
 * expected quiet (promtool checks what the tests say; this checks the tests say it), and carries
 * a severity, a summary and a runbook link into docs/operations.md that exists.
 */
function unitTestedAlerts(alerts: Map<string, AlertRule>, tests: string[]): string[] {
  const fired = new Set<string>();
  const quiet = new Set<string>();
  type AlertTest = { alertname: string; exp_alerts?: unknown[] };
  for (const t of tests) {
    const doc = parse(readFileSync(t, 'utf8')) as { tests: { alert_rule_test?: AlertTest[] }[] };
    for (const c of doc.tests)
      for (const a of c.alert_rule_test ?? []) (a.exp_alerts?.length ? fired : quiet).add(a.alertname);
  }
  const runbooks = readFileSync(path.join(ROOT, 'docs/operations.md'), 'utf8');
  const problems: string[] = [];
  for (const [name, rule] of alerts) {
    if (!fired.has(name)) problems.push(`alert ${name} has no unit test in which it fires (observability/tests/)`);
    if (!quiet.has(name) && name !== ALWAYS_FIRING)
      problems.push(`alert ${name} has no unit test in which it stays quiet (observability/tests/)`);
    if (!rule.labels?.severity) problems.push(`alert ${name} has no severity label`);
    if (!rule.annotations?.summary) problems.push(`alert ${name} has no summary`);
    const anchor = /^docs\/operations\.md#([a-z0-9-]+)$/.exec(rule.annotations?.runbook_url ?? '')?.[1];
    if (!anchor) problems.push(`alert ${name}: runbook_url must be docs/operations.md#<anchor>`);
    else if (!new RegExp(`^#+ ${name}$`, 'm').test(runbooks) || name.toLowerCase() !== anchor)
      problems.push(`alert ${name}: docs/operations.md has no runbook heading naming it (anchor #${anchor})`);
  }
  return problems;
}

if (require.main === module) {
  const cmd = process.argv[2];
  if (cmd === 'generate') {
    writeFileSync(SLO_RULES, generateSloRules());
    console.log(`wrote ${path.relative(ROOT, SLO_RULES)}`);
  } else if (cmd === 'check') check();
  else if (cmd === 'write' && process.argv[3]) {
    // `OBSERVE=1 SLO_WINDOW_SCALE=60 make run`: the rules with their windows scaled, for a demo.
    for (const f of writeRules(process.argv[3], { windowScale: Number(process.argv[4] ?? 1) })) console.log(f);
  } else {
    console.error('usage: observability.ts generate | check | write DIR [WINDOW_SCALE]');
    process.exit(2);
  }
}
