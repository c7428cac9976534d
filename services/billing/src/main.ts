import {
  cachedRead,
  Lease,
  LEASE_TTL_MS,
  openService,
  runAsMain,
  serveGrpc,
  serviceMetrics,
  startEvents,
  Worker,
} from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import { rateCard, readConfig } from './config';
import { billingEvents } from './events/publish';
import { billingService } from './grpc/billing-server';
import { AuditStore } from './store/audit-store';
import { CallStore } from './store/call-store';
import { WalletStore } from './store/wallet-store';
import { Billing } from './usecases/billing';
import { CallCharging } from './usecases/calls';
import { LedgerAudit } from './workers/ledger-audit';
import { Sweeper } from './workers/sweeper';
import { Wallets } from './usecases/wallets';

/** Starts the billing service; returns its lifecycle so tests can stop it in-process. */
export async function startBilling(env: Record<string, string | undefined> = process.env) {
  const cfg = readConfig(env);
  const svc = await openService('billing', cfg);
  const { log, lifecycle, conn } = svc;
  const rates = rateCard(cfg);

  const store = new WalletStore(conn);
  const calls = new CallStore(conn);
  const audits = new AuditStore(conn);

  // Billing owns its streams (it reads none: telephony settles calls with it over gRPC).
  const { BillingCallEvent, BillingUsageEvent, BillingCreditEvent } = voiceapi.events.v1;
  const { outbox } = await startEvents({
    service: 'billing',
    settings: cfg,
    streams: [BillingCallEvent, BillingUsageEvent, BillingCreditEvent],
    log,
    lifecycle,
    outboxOn: conn,
  });

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

  const sweeper = new Sweeper({
    calls,
    charging,
    store,
    wallets,
    announce: (scope, from, to) => announcements.catchUp(scope, from, to),
    log,
    settleAfterMs: cfg.SETTLE_AFTER_MS,
  });
  // One replica sweeps and audits the ledger at a time: two workers on one lease.
  const lease = new Lease(conn, 'billing-sweeper', cfg.INSTANCE_ID, Math.max(LEASE_TTL_MS, cfg.SWEEP_INTERVAL_MS * 3));
  const sweeping = new Worker({
    service: 'billing',
    job: 'sweeper',
    everyMs: cfg.SWEEP_INTERVAL_MS,
    lease,
    log,
    pass: () => sweeper.sweep(),
  });
  sweeping.start();
  lifecycle.onStop('sweeper', () => sweeping.stop());

  const audit = new LedgerAudit({
    store,
    audits,
    log,
    now: () => new Date(),
    audited: metrics.counter('ledger.audited_wallets', {
      description: 'Wallets the ledger audit checked (their entries since its last pass)',
      unit: '{wallet}',
    }),
  });
  const auditing = new Worker({
    service: 'billing',
    job: 'ledger-audit',
    everyMs: cfg.LEDGER_AUDIT_INTERVAL_MS,
    lease,
    log,
    pass: () => audit.pass(),
  });
  auditing.start();
  lifecycle.onStop('ledger audit', () => auditing.stop());
  // What the audit found, from its marks: every replica reports the same count (max, not sum).
  const unbalanced = cachedRead(10_000, () => audits.unbalanced());
  const unbalancedGauge = metrics.gauge(
    'ledger.unbalanced_wallets',
    {
      description: 'Wallets the ledger audit found whose balance is not what their ledger rows sum to',
      unit: '{wallet}',
    },
    async () => [{ value: await unbalanced(), attributes: {} }],
  );
  lifecycle.onStop('ledger audit gauge', () => unbalancedGauge.stop());

  const server = await serveGrpc(svc, [billingService(billing, charging, log)]);
  log.info({ port: server.port, rates }, 'billing listening');
  return { port: server.port, lifecycle, log, sweeper, audit, wallets, store, charging };
}

runAsMain(module, 'billing', () => startBilling());
