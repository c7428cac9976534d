import path from 'node:path';
import { alertmanagerConfig } from '@voiceapi/local-infra';
import { parse, stringify } from 'yaml';
import { Receiver } from '../../services/webhooks/test/receiver';
import { startAlertmanager, type Alertmanager, type Notification } from '../harness/alertmanager';
import { startPrometheus, type Prometheus } from '../harness/prometheus';
import { eventually, sleep } from '../harness/wait';
import { RULES_DIR } from '../../tools/observability';

/**
 * What reaches a person: the shipped Alertmanager configuration on a real Alertmanager, alerts
 * posted as Prometheus posts them, and a receiver recording what each of its URLs got. Timings
 * divided by 60 (as SLO_WINDOW_SCALE=60 divides them): pages wait 0.5 s, tickets 5 s.
 * The same alerts go to a second Alertmanager loaded with the configuration minus its inhibition
 * rules, which must deliver what the first keeps quiet: the quiet is the rules' doing.
 * Then a real Prometheus loaded with the shipped cause rules sends the Watchdog through.
 */
const SCALE = 60;

describe('Alertmanager as shipped: routes, inhibition, the Watchdog', () => {
  let receiver: Receiver;
  let shipped: Alertmanager;
  let withoutInhibition: Alertmanager;
  let prom: Prometheus | undefined;

  const receivers = (name: string) => ({
    webhookUrl: `${receiver.base}/${name}/alerts`,
    watchdogUrl: `${receiver.base}/${name}/watchdog`,
    timeScale: SCALE,
  });
  const got = (p: string): Notification[] => receiver.at(p).map((r) => JSON.parse(r.body) as Notification);
  const firing = (p: string) =>
    got(p)
      .filter((n) => n.status === 'firing')
      .flatMap((n) => n.alerts.map((a) => `${n.receiver}:${a.labels.alertname}`));

  beforeAll(async () => {
    receiver = await new Receiver().start();
    shipped = await startAlertmanager(receivers('shipped'));
    const config = parse(alertmanagerConfig(receivers('canary'))) as Record<string, unknown>;
    expect(config.inhibit_rules).toBeDefined();
    delete config.inhibit_rules;
    withoutInhibition = await startAlertmanager({ config: stringify(config) });
  }, 120_000);

  afterAll(async () => {
    await prom?.stop();
    await shipped?.stop();
    await withoutInhibition?.stop();
    await receiver?.stop();
  }, 60_000);

  it("delivers pages and tickets by severity, a page quiets its SLO's ticket, and a silent service quiets the SLOs it explains", async () => {
    const slo = (alertname: string, sloth_slo: string, severity: string, extra: Record<string, string> = {}) => ({
      labels: { alertname, sloth_slo, severity, ...extra },
      annotations: { summary: `${alertname} (${severity})` },
    });
    const alerts = [
      // One SLO burning fast and slow: the page alone should be heard.
      slo('ApiLatencySLOBurn', 'api-latency', 'page', { route_group: 'calls' }),
      slo('ApiLatencySLOBurn', 'api-latency', 'ticket', { route_group: 'calls' }),
      // Another route group's slow burn has no page above it, and billing does not explain it: its ticket is delivered.
      slo('ApiLatencySLOBurn', 'api-latency', 'ticket', { route_group: 'companies' }),
      // Billing silent: its page is heard, the call-charge burn it explains is not.
      { labels: { alertname: 'ServiceSilent', job: 'voiceapi/billing', severity: 'page' } },
      slo('CallChargeSLOBurn', 'call-charge', 'page'),
      // Nor the API routes that ask billing (a lead is taken only if a live wallet covers a call).
      slo('ApiAvailabilitySLOBurn', 'api-availability', 'page', { route_group: 'leads' }),
      // Webhook delivery does not depend on billing: still heard.
      slo('WebhookDeliverySLOBurn', 'webhook-delivery', 'page'),
    ];
    await Promise.all([shipped.post(alerts), withoutInhibition.post(alerts)]);

    await eventually(
      'the companies ticket delivered (tickets wait 5 s)',
      () => firing('/shipped/alerts').includes('ticket:ApiLatencySLOBurn'),
      30_000,
      { detail: () => [firing('/shipped/alerts'), shipped.output()] },
    );
    await eventually(
      'what the rules keep quiet, delivered without them',
      () => {
        const f = firing('/canary/alerts');
        return (
          f.includes('page:CallChargeSLOBurn') &&
          f.includes('page:ApiAvailabilitySLOBurn') &&
          f.filter((x) => x === 'ticket:ApiLatencySLOBurn').length === 2
        );
      },
      30_000,
      { detail: () => [firing('/canary/alerts'), withoutInhibition.output()] },
    );
    // Past the tickets' wait again, so a ticket the rules failed to quiet would have come.
    await sleep(6_000);
    const heard = got('/shipped/alerts');
    // Heard: each page but call-charge's and the leads routes' (billing's silence explains them), and one ticket.
    expect(firing('/shipped/alerts').sort()).toEqual(
      [
        'page:ApiLatencySLOBurn',
        'page:ServiceSilent',
        'page:WebhookDeliverySLOBurn',
        'ticket:ApiLatencySLOBurn',
      ].sort(),
    );
    const ticket = heard.find((n) => n.receiver === 'ticket')!;
    expect(ticket.alerts.map((a) => a.labels.route_group)).toEqual(['companies']);
    // Without the rules the same alerts reach further: the quiet above is theirs.
    expect(firing('/canary/alerts').sort()).toEqual(
      [
        'page:ApiAvailabilitySLOBurn',
        'page:ApiLatencySLOBurn',
        'page:CallChargeSLOBurn',
        'page:ServiceSilent',
        'page:WebhookDeliverySLOBurn',
        'ticket:ApiLatencySLOBurn',
        'ticket:ApiLatencySLOBurn',
      ].sort(),
    );
    // Nothing reached a watchdog URL but the Watchdog (none was posted here).
    expect(receiver.at('/shipped/watchdog')).toEqual([]);
  }, 90_000);

  it("the Watchdog goes from Prometheus's rules through Alertmanager to the watchdog URL, and nowhere else", async () => {
    prom = await startPrometheus({
      ruleFiles: [path.join(RULES_DIR, 'causes.rules.yaml')],
      evaluationIntervalS: 1,
      alertmanagers: [shipped.target],
    });
    const watchdog = await eventually(
      'the Watchdog at the watchdog URL',
      () => got('/shipped/watchdog').find((n) => n.alerts.some((a) => a.labels.alertname === 'Watchdog')),
      60_000,
      { detail: () => [prom!.output(), shipped.output()] },
    );
    expect(watchdog.receiver).toBe('watchdog');
    expect(firing('/shipped/alerts')).not.toContain('page:Watchdog');
    expect(got('/shipped/alerts').flatMap((n) => n.alerts.map((a) => a.labels.alertname))).not.toContain('Watchdog');
  }, 90_000);
});
