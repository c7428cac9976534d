import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { parse } from 'yaml';
import { launchBrowser, type Browser } from '../harness/browser';
import { ROOT, startProcess, waitFor, type Proc } from '../harness/processes';
import { startPrometheus, type Prometheus } from '../harness/prometheus';
import { writeRules } from '../tools/observability';

// The SLO page (observability/page, served by Prometheus itself at /user/) as a person sees it in
// a browser: a real Prometheus evaluates the real generated rules, windows divided by 60 so a
// burn shows within seconds, and metrics arrive over OTLP as the processes send them (OpenTelemetry's
// SDK in a process of its own, test/fixtures/slo-burn-metrics.ts). Telephony ends calls and
// charges none within its minute: call-charge burns and pages; leads' first attempts are decided in
// time: lead-to-dial is OK.

const WINDOW_SCALE = 60;
const PAGE = 'observability/page';

const UNIT_S: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };

interface RuleFile {
  groups: {
    rules: { record?: string; alert?: string; labels?: Record<string, string>; annotations?: Record<string, string> }[];
  }[];
}

/** What the rule files declare: the SLOs with their objectives, the SLI windows, the alerts. */
function declared(files: string[]) {
  const rules = files.flatMap((f) => (parse(readFileSync(f, 'utf8')) as RuleFile).groups.flatMap((g) => g.rules));
  const slos = new Map(
    rules.filter((r) => r.record === 'sloth_slo_info').map((r) => [r.labels!.sloth_slo!, r.labels!.sloth_objective!]),
  );
  const seconds = (d: string) =>
    [...d.matchAll(/(\d+)([smhdw])/g)].reduce((s, [, n, u]) => s + Number(n) * UNIT_S[u!]!, 0);
  const windows = [
    ...new Set(rules.flatMap((r) => /^slo:sli_error:ratio_rate(.+)$/.exec(r.record ?? '')?.[1] ?? [])),
  ].sort((a, b) => seconds(a) - seconds(b));
  const alert = (name: string) => rules.filter((r) => r.alert === name);
  return { slos, windows, alert };
}

const sloRow = (page: Page, slo: string) => page.locator(`tr[data-testid="slo-row"][data-slo="${slo}"]`);
/** The figure a cell shows first ("200×", "0.00×", "-19900%"). */
const figure = (text: string | null) => Number.parseFloat(/-?\d+(\.\d+)?/.exec(text ?? '')?.[0] ?? 'NaN');

describe('SLO page', () => {
  let rulesDir: string;
  let rules: ReturnType<typeof declared>;
  let prom: Prometheus;
  let browser: Browser;
  let page: Page;
  const pageErrors: string[] = [];
  let metrics: Proc | undefined;
  const stopPushing = async () => {
    await metrics?.stop();
  };

  beforeAll(async () => {
    rulesDir = mkdtempSync(path.join(tmpdir(), 'voiceapi-slo-page-rules-'));
    // Sloth and Prometheus are built from the Go module proxy on a machine's first run (minutes).
    // The SLO rules only: the cause rules' ServiceSilent would rightly be pending for every service
    // of the platform, none of which runs here.
    const ruleFiles = writeRules(rulesDir, { windowScale: WINDOW_SCALE }).filter((f) => f.endsWith('slos.rules.yaml'));
    rules = declared(ruleFiles);
    prom = await startPrometheus({ ruleFiles, userAssets: path.join(ROOT, PAGE), evaluationIntervalS: 1 });
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.on('pageerror', (err) => pageErrors.push(String(err)));
    await page.goto(`${prom.url}/user/index.html?refresh=1`);
  }, 900_000);

  afterAll(async () => {
    await stopPushing();
    await browser?.close();
    await prom?.stop();
    if (rulesDir) rmSync(rulesDir, { recursive: true, force: true });
  });

  it('lists every SLO of the rules with its objective, each window as a column, and says no alert is firing', async () => {
    expect(rules.slos.size).toBeGreaterThan(1);
    expect(rules.slos.has('call-charge') && rules.slos.has('lead-to-dial')).toBe(true);
    // Every SLO listed, its objective read (the rules list comes before their first evaluation).
    await page.waitForFunction(
      `(() => { const cells = [...document.querySelectorAll('[data-testid="slo-objective"]')]; return cells.length === ${rules.slos.size} && cells.every((c) => c.textContent.endsWith('%')); })()`,
    );

    const table = page.getByRole('table', { name: /Every SLO/ });
    for (const [slo, objective] of rules.slos) {
      await expect(table.getByRole('rowheader', { name: new RegExp(`^${slo}\\b`) }).count()).resolves.toBe(1);
      expect(await sloRow(page, slo).getByTestId('slo-objective').textContent()).toBe(`${objective}%`);
      expect(await sloRow(page, slo).getAttribute('data-status')).toBe('nodata');
      expect(await sloRow(page, slo).getByTestId('slo-status-text').innerText()).toBe('– No data');
    }
    expect(await page.locator('[data-testid="slo-row"]').count()).toBe(rules.slos.size);
    // The windows the rules compute (scaled down here), shortest first: none is written into the page.
    expect(rules.windows).toContain(`${(5 * 60) / WINDOW_SCALE}s`);
    expect(await page.getByTestId('slo-window-heading').allTextContents()).toEqual(rules.windows);

    await expect(page.getByTestId('no-alerts').innerText()).resolves.toBe('No alerts firing or pending.');
    expect(await page.getByTestId('alerts-table').isVisible()).toBe(false);
    // Without the cause rules, no Watchdog: the page says the pipeline is not proven.
    expect(await page.getByTestId('watchdog').getAttribute('data-firing')).toBe('false');
    expect(await page.getByTestId('error-banner').isVisible()).toBe(false);
    expect(await page.getByTestId('last-refresh').innerText()).toMatch(/^Last refreshed \d\d:\d\d:\d\d · every 1 s$/);
  });

  it('shows call-charge burning, its page alert firing with summary and runbook, and lead-to-dial OK', async () => {
    metrics = startProcess(
      'slo-burn-metrics',
      'test/fixtures/slo-burn-metrics.ts',
      { OTLP_METRICS_URL: prom.otlpMetricsUrl },
      ['--import', 'tsx'],
    );
    const started = Date.now();
    await waitFor(
      'ended calls in Prometheus',
      async () => (await prom.query('voiceapi_telephony_calls_ended_total')).length > 0,
      30_000,
      metrics,
    );

    await page
      .locator('tr[data-testid="slo-row"][data-slo="call-charge"][data-status="burning"]')
      .waitFor({ timeout: 90_000 });
    await page
      .locator('tr[data-testid="alert-row"][data-alertname="CallChargeSLOBurn"][data-state="firing"]')
      .first()
      .waitFor({ timeout: 90_000 });
    await page
      .locator('tr[data-testid="slo-row"][data-slo="lead-to-dial"][data-status="ok"]')
      .waitFor({ timeout: 60_000 });
    // The period's figures follow the short windows by an evaluation or two.
    await sloRow(page, 'call-charge')
      .getByTestId('slo-budget')
      .filter({ hasText: /^exhausted/ })
      .waitFor({ timeout: 30_000 });
    await sloRow(page, 'lead-to-dial')
      .getByTestId('slo-budget')
      .filter({ hasText: /^100%$/ })
      .waitFor({ timeout: 30_000 });
    process.stderr.write(
      `[slo page] call-charge burning and its alert firing ${((Date.now() - started) / 1000).toFixed(1)} s after the first call ended\n`,
    );

    // call-charge: what a person reads in its row.
    const charge = sloRow(page, 'call-charge');
    expect(await charge.getByTestId('slo-status-text').innerText()).toBe('▲ Burning');
    expect(await charge.getByTestId('slo-status').innerText()).toMatch(/page alert firing/);
    const burn = figure(await charge.getByTestId('slo-current-burn').innerText());
    expect(burn).toBeGreaterThan(1);
    // Every call ended unsettled: the error ratio is 1, the burn 1 / (1 - objective).
    expect(burn).toBeCloseTo(1 / (1 - Number(rules.slos.get('call-charge')) / 100), 0);
    const shortest = charge.locator(`[data-testid="slo-window-burn"][data-window="${rules.windows[0]}"]`);
    expect(figure(await shortest.innerText())).toBeGreaterThan(1);
    expect(await charge.getByTestId('slo-budget').innerText()).toMatch(/^exhausted \(-\d+(\.\d)?%\)$/);
    expect(await charge.getByTestId('slo-alerts').innerText()).toMatch(/CallChargeSLOBurn page \(firing\)/);
    // The page says what Prometheus says.
    const [measured] = await prom.query('slo:current_burn_rate:ratio{sloth_slo="call-charge"}');
    expect(Number(measured!.value[1])).toBeGreaterThan(1);

    // The alert: firing, page severity, the rule's summary, a runbook link named for it.
    const [pageRule] = rules.alert('CallChargeSLOBurn').filter((r) => r.labels?.severity === 'page');
    const alertRow = page
      .locator('tr[data-testid="alert-row"][data-alertname="CallChargeSLOBurn"]')
      .filter({ has: page.locator('[data-testid="alert-severity"]', { hasText: /^page$/ }) });
    expect(await alertRow.getByTestId('alert-state').innerText()).toBe('● Firing');
    expect(await alertRow.getByTestId('alert-summary').innerText()).toBe(
      pageRule!.annotations!.summary!.replace(/\s+/g, ' ').trim(),
    );
    expect(await alertRow.getByTestId('alert-slo').innerText()).toBe('voiceapi/call-charge');
    const runbook = alertRow.getByRole('link', { name: 'Runbook for CallChargeSLOBurn' });
    const [doc, anchor] = pageRule!.annotations!.runbook_url!.split('#');
    expect(await runbook.getAttribute('href')).toBe(`runbook.html?doc=${encodeURIComponent(doc!)}#${anchor}`);
    expect(await page.getByTestId('no-alerts').isVisible()).toBe(false);

    // lead-to-dial: measured and healthy.
    const dial = sloRow(page, 'lead-to-dial');
    expect(await dial.getByTestId('slo-status-text').innerText()).toBe('✓ OK');
    expect(figure(await dial.getByTestId('slo-current-burn').innerText())).toBeLessThanOrEqual(1);
    expect(await dial.getByTestId('slo-budget').innerText()).toBe('100%');
    expect(await dial.getByTestId('slo-alerts').innerText()).toBe('none');

    // The page keeps refreshing by itself.
    const at = Number(await page.getByTestId('last-refresh').getAttribute('data-refreshed-at'));
    await page.waitForFunction(
      `Number(document.getElementById('last-refresh').dataset.refreshedAt) > ${at}`,
      undefined,
      { timeout: 10_000 },
    );
  }, 180_000);

  it("opens the alert's runbook section from its link", async () => {
    const link = page
      .locator('tr[data-testid="alert-row"][data-alertname="CallChargeSLOBurn"]')
      .first()
      .getByRole('link', { name: 'Runbook for CallChargeSLOBurn' });
    await link.click();
    await page.getByTestId('runbook').locator('h1').waitFor();
    expect(await page.getByTestId('runbook').locator('h1').innerText()).toBe('CallChargeSLOBurn');
    expect(await page.getByTestId('runbook-error').isVisible()).toBe(false);
    await page.goBack();
    await page.locator('tr[data-testid="slo-row"][data-slo="call-charge"][data-status="burning"]').waitFor();
  });

  it('says so when Prometheus stops answering, and keeps the last figures on show', async () => {
    await stopPushing();
    await prom.stop();
    const banner = page.getByTestId('error-banner');
    await banner.waitFor({ state: 'visible', timeout: 15_000 });
    expect(await banner.innerText()).toMatch(
      /^Prometheus is not answering\. .*The figures below are from the last good refresh at \d\d:\d\d:\d\d\.$/s,
    );
    expect(await banner.getAttribute('role')).toBe('alert');
    expect(await sloRow(page, 'call-charge').getByTestId('slo-status-text').innerText()).toBe('▲ Burning');
    expect(pageErrors).toEqual([]);
  });
});
