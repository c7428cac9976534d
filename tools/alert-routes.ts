/**
 * Alertmanager's shipped configuration, checked with amtool (part of `make rules-check`, called by
 * tools/observability.ts): what routes where. What keeps quiet (inhibition) is tested on a real
 * Alertmanager, test/e2e/alert-routing.test.ts.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ALERTMANAGER_CONFIG } from '@voiceapi/local-infra';
import { parse } from 'yaml';

const ROOT = path.resolve(__dirname, '..');
const ROUTE_TESTS = path.join(ROOT, 'observability/tests/alert-routes.yaml');

/**
 * The shipped Alertmanager configuration passes amtool's check; each case of
 * observability/tests/alert-routes.yaml reaches the receiver it names; and every alert of the rule
 * files, with its own labels, reaches the receiver of its severity (none: the watchdog), never the
 * null receiver an unrouted alert falls to.
 */
export function alertmanagerChecks(alerts: Map<string, { labels?: Record<string, string> }>): string[] {
  const amtool = execFileSync('bash', [path.join(ROOT, 'scripts/alertmanager.sh'), 'amtool'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
  }).trim();
  const problems: string[] = [];
  const run = (args: string[]): string | undefined => {
    try {
      execFileSync(amtool, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
      return undefined;
    } catch (err) {
      const e = err as { stdout?: string; stderr?: string };
      return `${e.stdout ?? ''}${e.stderr ?? ''}`.trim();
    }
  };
  const invalid = run(['check-config', ALERTMANAGER_CONFIG]);
  if (invalid) return [`amtool check-config ${path.relative(ROOT, ALERTMANAGER_CONFIG)} failed:\n${invalid}`];
  const routesTo = (labels: Record<string, string>, receiver: string, what: string): void => {
    const args = Object.entries(labels).map(([k, v]) => `${k}=${v}`);
    const wrong = run([
      'config',
      'routes',
      'test',
      `--config.file=${ALERTMANAGER_CONFIG}`,
      `--verify.receivers=${receiver}`,
      ...args,
    ]);
    if (wrong) problems.push(`${what} (${args.join(' ')}) does not reach receiver ${receiver}: ${wrong}`);
  };
  const cases = (
    parse(readFileSync(ROUTE_TESTS, 'utf8')) as { cases: { labels: Record<string, string>; receiver: string }[] }
  ).cases;
  for (const c of cases) routesTo(c.labels, c.receiver, `${path.relative(ROOT, ROUTE_TESTS)}: an alert`);
  for (const [name, rule] of alerts) {
    const severity = rule.labels?.severity ?? '';
    routesTo({ alertname: name, ...rule.labels }, severity === 'none' ? 'watchdog' : severity, `alert ${name}`);
  }
  return problems;
}
