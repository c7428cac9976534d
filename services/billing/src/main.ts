import { startEvents } from '@voiceapi/kit/events';
import { openService, runAsMain, serveGrpc } from '@voiceapi/kit/service';
import { voiceapi } from '@voiceapi/proto';
import { readConfig } from './config';
import { billingService } from './grpc/billing-server';
import { openStores } from './wiring/stores';
import { buildUseCases } from './wiring/usecases';
import { startWorkers } from './wiring/workers';

/** Starts the billing service; returns its lifecycle so tests can stop it in-process. */
export async function startBilling(env: Record<string, string | undefined> = process.env) {
  const cfg = readConfig(env);
  const svc = await openService('billing', cfg);
  const { log, lifecycle, conn } = svc;
  const stores = openStores(svc);

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

  const useCases = buildUseCases(svc, stores, outbox);
  const { sweeper, audit } = startWorkers(svc, stores, useCases);

  const { rates, wallets, charging, billing } = useCases;
  const server = await serveGrpc(svc, [billingService(billing, charging, log)]);
  log.info({ port: server.port, rates }, 'billing listening');
  return { port: server.port, lifecycle, log, sweeper, audit, wallets, store: stores.store, charging };
}

runAsMain(module, 'billing', () => startBilling());
