// Over 300 lines because the SLO page is one screen read by one browser session: its SLO table, alerts, routed alerts and failure displays are checked in order against the same Prometheus and Alertmanager.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePorts } from '@voiceapi/local-infra';
import type { Page } from 'playwright-core';
import { parse } from 'yaml';
import { Receiver } from '../../services/webhooks/test/receiver';
import { startAlertmanager, type Alertmanager, type Notification } from '../harness/alertmanager';
import { launchBrowser, type Browser } from '../harness/browser';
import { ROOT, startProcess, waitFor, type Proc } from '../harness/processes';
import { startPrometheus, type Prometheus } from '../harness/prometheus';
import { eventually } from '../harness/wait';
import { writeRules } from '../../tools/observability';

// The SLO page (observability/page, served by Prometheus itself at /user/) as a person sees it in
// a browser: a real Prometheus evaluates the real generated rules, windows divided by 60 so a
// burn shows within seconds, and metrics arrive over OTLP as the processes send them (OpenTelemetry's
// SDK in a process of its own, test/fixtures/slo-burn-metrics.ts). Telephony ends calls and
// charges none within its minute: call-charge burns and pages; leads' first attempts are decided in
// time: lead-to-dial is OK. Prometheus sends its alerts to a real Alertmanager loaded with the shipped
// configuration (waits divided alike), whose receivers a recorder stands for; the page reads what
// Alertmanager holds from the browser (Alertmanager allows Prometheus's origin: CORS).

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
/** A row of the routed alerts: what Alertmanager does with an alert of this name and severity. */
const routedRow = (page: Page, alert: string, severity: string, state: string) =>
  page.locator(
    `tr[data-testid="routed-row"][data-alert="${alert}"][data-severity="${severity}"][data-state="${state}"]`,
  );
/** Label text a browser must show as text: were it markup, the image's error handler would run. */
const INJECTED = '<img src=x onerror="window.__injected=1">';
/** The figure a cell shows first ("200×", "0.00×", "-19900%"). */
const figure = (text: string | null) => Number.parseFloat(/-?\d+(\.\d+)?/.exec(text ?? '')?.[0] ?? 'NaN');

describe('SLO page', () => {
  let rulesDir: string;
  let rules: ReturnType<typeof declared>;
  let prom: Prometheus;
  let alertmanager: Alertmanager;
  let recorder: Receiver;
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
    recorder = await new Receiver().start();
    // Alertmanager's port first: Prometheus sends to it, and it lets the page Prometheus serves read it.
    const [amPort] = await freePorts(1);
    prom = await startPrometheus({
      ruleFiles,
      userAssets: path.join(ROOT, PAGE),
      evaluationIntervalS: 1,
      alertmanagers: [`127.0.0.1:${amPort}`],
      // Alertmanager starts after it: what it sends before then goes again within seconds.
      alertResendDelayS: 5,
    });
    alertmanager = await startAlertmanager({
      port: amPort,
      corsOrigins: [prom.url],
      webhookUrl: `${recorder.base}/alerts`,
      watchdogUrl: `${recorder.base}/watchdog`,
      timeScale: WINDOW_SCALE,
    });
    browser = await launchBrowser();
    page = await browser.context.newPage();
    page.on('pageerror', (err) => pageErrors.push(String(err)));
    await page.goto(`${prom.url}/user/index.html?refresh=1`);
  }, 900_000);

  afterAll(async () => {
    await stopPushing();
    await browser?.close();
    await prom?.stop();
    await alertmanager?.stop();
    await recorder?.stop();
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

    // Routed alerts: Prometheus sends to the one Alertmanager, which holds nothing yet.
    const am = page.locator(`[data-testid="alertmanager"][data-url="${alertmanager.url}"]`);
    await am.getByTestId('alertmanager-summary').filter({ hasText: 'Holds no alert.' }).waitFor({ timeout: 30_000 });
    expect(await am.getByTestId('alertmanager-summary').innerText()).toBe('Holds no alert.');
    expect(await am.getByRole('heading').innerText()).toBe(`Alertmanager ${alertmanager.url}`);
    expect(await page.getByTestId('alertmanager').count()).toBe(1);
    expect(await page.getByTestId('routed-none').count()).toBe(0);
    expect(await page.getByTestId('routed-error').count()).toBe(0);
    await page.locator('[data-testid="watchdog"][data-alertmanager="false"]').waitFor({ timeout: 10_000 });
  });

  it("shows what only Alertmanager knows: an alert's receiver, its silence, the Watchdog, label text as text", async () => {
    // Posted straight to Alertmanager, as Prometheus posts (Prometheus knows neither): gone in two minutes.
    const endsAt = new Date(Date.now() + 120_000).toISOString();
    await alertmanager.post([
      { labels: { alertname: INJECTED, job: '<b>bold</b>' }, annotations: { summary: INJECTED }, endsAt },
      { labels: { alertname: 'Watchdog', severity: 'none' }, endsAt },
    ]);
    const injected = page.locator('tr[data-testid="routed-row"]').filter({ hasText: 'onerror' });
    await injected.waitFor({ timeout: 15_000 });
    expect(await injected.getByTestId('routed-name').innerText()).toBe(INJECTED);
    expect(await injected.getAttribute('data-alert')).toBe(INJECTED);
    expect(await injected.getByTestId('routed-slo').innerText()).toBe('<b>bold</b>');
    // No severity: the shipped routes leave it with the receiver that notifies no one.
    expect(await injected.getAttribute('data-receiver')).toBe('null');
    expect(await injected.getAttribute('data-state')).toBe('active');
    expect(await injected.getByTestId('routed-state').innerText()).toBe('● Notifying null');

    // The Watchdog on its own line (Alertmanager holds it, though Prometheus here evaluates none), not in the table.
    const watchdog = page.locator('[data-testid="watchdog"][data-alertmanager="true"]');
    await watchdog.waitFor({ timeout: 15_000 });
    expect(await watchdog.getAttribute('data-firing')).toBe('false');
    expect(await watchdog.innerText()).toMatch(
      /Alertmanager still holds one \(routed to watchdog\), until it expires\.$/,
    );
    expect(await page.locator('tr[data-testid="routed-row"][data-alert="Watchdog"]').count()).toBe(0);
    await eventually(
      'the Watchdog at the watchdog URL',
      () =>
        recorder
          .at('/watchdog')
          .some((r) => (JSON.parse(r.body) as Notification).alerts.some((a) => a.labels.alertname === 'Watchdog')),
      15_000,
    );

    // Silenced: who set the silence and why, as text too.
    const silence = await fetch(`${alertmanager.url}/api/v2/silences`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        matchers: [{ name: 'alertname', value: INJECTED, isRegex: false, isEqual: true }],
        startsAt: new Date().toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
        createdBy: 'slo-page test',
        comment: '<i>maintenance</i>',
      }),
    });
    expect(silence.status).toBe(200);
    const silenced = page.locator('tr[data-testid="routed-row"][data-state="silenced"]').filter({ hasText: 'onerror' });
    await silenced.waitFor({ timeout: 15_000 });
    expect(await silenced.getByTestId('routed-state').innerText()).toMatch(
      /^○ Silenced by slo-page test: <i>maintenance<\/i> \(until \d\d:\d\d:\d\d\)$/,
    );
    expect(await silenced.getAttribute('data-receiver')).toBe('null');

    // Nothing of the labels became markup.
    expect(await page.locator('[data-testid="routed"] :is(img, b, i)').count()).toBe(0);
    expect(await page.evaluate('window.__injected')).toBeUndefined();
  }, 60_000);

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

    // Alertmanager's view, read by the page from Alertmanager itself. The shipped routes send each
    // severity to its receiver; its first inhibit rule has the page quiet the ticket of the same
    // alert and SLO (both fire here: the whole budget burns in every window).
    const [ticketRule] = rules.alert('CallChargeSLOBurn').filter((r) => r.labels?.severity === 'ticket');
    expect(ticketRule).toBeDefined();
    await routedRow(page, 'CallChargeSLOBurn', 'page', 'active').waitFor({ timeout: 60_000 });
    await routedRow(page, 'CallChargeSLOBurn', 'ticket', 'inhibited').waitFor({ timeout: 60_000 });
    const paged = routedRow(page, 'CallChargeSLOBurn', 'page', 'active');
    expect(await paged.getAttribute('data-receiver')).toBe('page');
    expect(await paged.getByTestId('routed-receiver').innerText()).toBe('page');
    expect(await paged.getByTestId('routed-state').innerText()).toBe('● Notifying page');
    expect(await paged.getByTestId('routed-slo').innerText()).toBe('voiceapi/call-charge');
    const quiet = routedRow(page, 'CallChargeSLOBurn', 'ticket', 'inhibited');
    expect(await quiet.getAttribute('data-receiver')).toBe('ticket');
    expect(await quiet.getAttribute('data-inhibited-by')).toBe('CallChargeSLOBurn');
    expect(await quiet.getByTestId('routed-state').innerText()).toBe(
      '○ Inhibited by CallChargeSLOBurn page (voiceapi/call-charge)',
    );
    await page
      .getByTestId('alertmanager-summary')
      .filter({ hasText: /^Holds \d+ alerts: \d+ notifying a receiver, \d+ inhibited/ })
      .waitFor({ timeout: 10_000 });
    // What the page says is what the page receiver hears.
    await eventually(
      'the call-charge page at the alerts URL',
      () =>
        recorder
          .at('/alerts')
          .map((r) => JSON.parse(r.body) as Notification)
          .some(
            (n) =>
              n.receiver === 'page' &&
              n.status === 'firing' &&
              n.alerts.some((a) => a.labels.alertname === 'CallChargeSLOBurn'),
          ),
      30_000,
    );

    // The page keeps refreshing by itself.
    const at = Number(await page.getByTestId('last-refresh').getAttribute('data-refreshed-at'));
    await page.waitForFunction(
      `Number(document.getElementById('last-refresh').dataset.refreshedAt) > ${at}`,
      undefined,
      { timeout: 10_000 },
    );
  }, 300_000);

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

  it('says so when Alertmanager stops answering, keeps its last routed alerts on show, and the rest refreshing', async () => {
    const routedCharge = page.locator('tr[data-testid="routed-row"][data-alert="CallChargeSLOBurn"]');
    await routedCharge.first().waitFor();
    await alertmanager.stop();
    const error = page.getByTestId('routed-error');
    await error.waitFor({ state: 'visible', timeout: 15_000 });
    expect(await error.innerText()).toMatch(
      new RegExp(
        `^Alertmanager at ${alertmanager.url.replace(/\./g, '\\.')} could not be read: .+\\. Tried at \\d\\d:\\d\\d:\\d\\d; trying again every 1 s\\. The routed alerts below are from the last good read at \\d\\d:\\d\\d:\\d\\d\\.$`,
        's',
      ),
    );
    expect(
      await page.locator(`[data-testid="alertmanager"][data-url="${alertmanager.url}"]`).getAttribute('data-stale'),
    ).toBe('true');
    expect(await routedCharge.count()).toBeGreaterThan(0);
    await page.locator('[data-testid="watchdog"][data-alertmanager="unknown"]').waitFor({ timeout: 10_000 });
    // Prometheus's part is untouched: no banner, still refreshing.
    expect(await page.getByTestId('error-banner').isVisible()).toBe(false);
    const at = Number(await page.getByTestId('last-refresh').getAttribute('data-refreshed-at'));
    await page.waitForFunction(
      `Number(document.getElementById('last-refresh').dataset.refreshedAt) > ${at}`,
      undefined,
      { timeout: 10_000 },
    );
    expect(await sloRow(page, 'call-charge').getByTestId('slo-status-text').innerText()).toBe('▲ Burning');
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
