import {
  connectMongo,
  consumerGroup,
  createLogger,
  EventSubscriber,
  Lease,
  Lifecycle,
  Worker,
  serviceMetrics,
  shutdownTelemetry,
  startEvents,
  startGrpcServer,
} from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import { rateCard, readConfig } from './config';
import { Announcements } from './events/publish';
import { chargeEndedCalls } from './events/consume';
import { billingService } from './grpc/billing-server';
import { CallStore } from './store/call-store';
import { WalletStore } from './store/wallet-store';
import { Billing } from './usecases/billing';
import { CallCharging } from './usecases/calls';
import { Sweeper } from './workers/sweeper';
import { Wallets } from './usecases/wallets';

/** Starts the billing service; returns its lifecycle so tests can stop it in-process. */
export async function startBilling(env: Record<string, string | undefined> = process.env) {
  const cfg = readConfig(env);
  const log = createLogger('billing', cfg.LOG_LEVEL);
  const lifecycle = new Lifecycle(log, cfg.SHUTDOWN_GRACE_MS);
  lifecycle.onStop('telemetry', shutdownTelemetry);
  const rates = rateCard(cfg);

  const conn = await connectMongo({ url: cfg.MONGO_URL, dbName: cfg.MONGO_DB, log, countOps: cfg.STORE_OPS_COUNTING });
  lifecycle.onStop('mongo', () => conn.close());
  const store = new WalletStore(conn);
  const calls = new CallStore(conn);

  // Billing owns its stream. It also creates telephony's call stream, which it reads, so it can
  // start before telephony exists (creation is idempotent, with the same settings).
  const { BillingEvent, TelephonyCallEvent } = voiceapi.events.v1;
  const { kafka, publisher, outbox } = await startEvents({ service: 'billing', settings: cfg, streams: [BillingEvent, TelephonyCallEvent], log, lifecycle, outboxOn: conn });

  const metrics = serviceMetrics('billing');
  const announcements = new Announcements(outbox, store);
  const wallets = new Wallets(store, log, (scope, entries) => announcements.ledgerEntries(scope, entries));
  lifecycle.onStop('wallet head hints', () => wallets.stop());
  const creditsCharged = metrics.counter<{ type: string }>('credits_charged', { description: 'Credits taken from wallets, by transaction type', unit: '{credit}' });
  const charging = new CallCharging(wallets, calls, rates, (o) => announcements.outcome(o), log, {
    billed: metrics.counter('calls_billed', { description: 'Ended calls billed, by outcome (charged, failed, skipped) and direction' }),
    lagMs: metrics.histogram('billing_lag', { description: 'From the end of a call to its billing outcome', unit: 'ms', buckets: [50, 100, 250, 500, 1000, 2500, 5000, 30_000, 300_000] }),
    credits: creditsCharged,
  });
  const billing = new Billing(wallets, store, rates, { charged: creditsCharged });

  const subscriber = chargeEndedCalls(new EventSubscriber(kafka, {
      group: consumerGroup('billing', 'call-charging'),
      log,
      publisher,
      // No inbox: charging is idempotent per call (one outcome, one reference), so a redelivery
      // costs one read. A wallet batches what arrives together (decision 0050).
      concurrency: cfg.CHARGING_CONCURRENCY,
    }), charging);
  await subscriber.start();
  lifecycle.onStop('call-ended consumer', () => subscriber.stop());

  const sweeper = new Sweeper({
    calls,
    charging,
    store,
    wallets,
    announce: (scope, from, to) => announcements.catchUp(scope, from, to),
    log,
    settleAfterMs: cfg.SETTLE_AFTER_MS,
  });
  const sweeping = new Worker({
    service: 'billing',
    job: 'sweeper',
    everyMs: cfg.SWEEP_INTERVAL_MS,
    lease: new Lease(conn, 'billing-sweeper', cfg.INSTANCE_ID, Math.max(10_000, cfg.SWEEP_INTERVAL_MS * 3)),
    log,
    pass: () => sweeper.sweep(),
  });
  sweeping.start();
  lifecycle.onStop('sweeper', () => sweeping.stop());

  const server = await startGrpcServer({
    host: cfg.GRPC_HOST,
    port: cfg.GRPC_PORT,
    services: [billingService(billing, log)],
    log,
    maxConnectionAgeMs: cfg.GRPC_MAX_CONNECTION_AGE_MS,
    maxConnectionAgeGraceMs: cfg.GRPC_MAX_CONNECTION_AGE_GRACE_MS,
  });
  lifecycle.onStop('grpc', () => server.drain(cfg.SHUTDOWN_GRACE_MS));
  log.info({ port: server.port, rates }, 'billing listening');
  return { port: server.port, lifecycle, log, sweeper, wallets, store, charging };
}

if (require.main === module) {
  startBilling().then(
    ({ lifecycle }) => lifecycle.handleSignals(),
    (err: unknown) => {
      // Config and connection failures end the process with one clear line, not a trace.
      console.error(`billing failed to start: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
