import type { Outbox } from '@voiceapi/kit/events';
import { serviceMetrics } from '@voiceapi/kit/metrics';
import type { OpenedService } from '@voiceapi/kit/service';
import { rateCard, type Config } from '../config';
import { billingEvents } from '../events/publish';
import { Billing } from '../usecases/billing';
import { CallCharging } from '../usecases/calls';
import { Wallets } from '../usecases/wallets';
import type { Stores } from './stores';

export type UseCases = ReturnType<typeof buildUseCases>;

/** The wallets, the calls' charging and the rest of the gRPC API, on the rate card of the settings. */
export function buildUseCases(
  { cfg, log, lifecycle }: OpenedService<Config>,
  { store, calls }: Stores,
  outbox: Outbox,
) {
  const rates = rateCard(cfg);
  const metrics = serviceMetrics('billing');
  const announcements = billingEvents(outbox, store, rates.outboundPerMinute);
  const wallets = new Wallets(
    store,
    log,
    (scope, entries, before) => announcements.ledgerEntries(scope, entries, before),
    cfg.WALLET_ENTRY_FORMAT,
  );
  lifecycle.onStop('wallet head hints', () => wallets.stop());
  const creditsCharged = metrics.counter<{ type: string }>('credits_charged', {
    description: 'Credits taken from wallets, by transaction type',
    unit: '{credit}',
  });
  const charging = new CallCharging(wallets, calls, rates, (o) => announcements.outcome(o), log, {
    billed: metrics.counter('calls_billed', {
      description: 'Ended calls billed, by outcome (charged, failed, skipped) and direction',
    }),
    settleDelay: metrics.histogram('call.settle_delay', {
      description: 'From the end of a call to its billing outcome, by outcome (charged, failed, skipped)',
      unit: 's',
      buckets: [0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 900],
    }),
    credits: creditsCharged,
  });
  const billing = new Billing(wallets, store, rates, { charged: creditsCharged });
  return { rates, announcements, wallets, charging, billing };
}
