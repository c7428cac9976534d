import { startEvents } from '@voiceapi/kit/events';
import { Lease } from '@voiceapi/kit/mongo';
import { openService, runAsMain, serveGrpc } from '@voiceapi/kit/service';
import { voiceapi } from '@voiceapi/proto';
import { readConfig } from './config';
import { leadsService } from './grpc/leads-server';
import { connectClients } from './wiring/clients';
import { openStores } from './wiring/stores';
import { buildUseCases } from './wiring/usecases';
import { startConsumers, startWorkers } from './wiring/workers';

/** Starts the leads service; returns its lifecycle so tests can stop it in-process. */
export async function startLeads(env: Record<string, string | undefined> = process.env) {
  const cfg = readConfig(env);
  // Contacts carry personal data: phones, names, addresses and rendered messages stay out of logs.
  const svc = await openService('leads', cfg, {
    redact: ['phone', '*.phone', 'email', '*.email', '*.name', 'body', '*.body', 'to', '*.to'],
  });
  const { log, lifecycle, conn } = svc;
  const stores = openStores(svc);

  // Also creates the call and billing streams it reads, so it can start before telephony or billing.
  const { LeadsDialEvent, LeadsContactEvent, LeadsMessageEvent, TelephonyCallEvent, BillingCreditEvent } =
    voiceapi.events.v1;
  // The scheduler and the outbox relay run on one lease, so an idle replica renews one lease.
  const lease = new Lease(conn, 'leads-scheduler', cfg.INSTANCE_ID);
  const events = await startEvents({
    service: 'leads',
    settings: cfg,
    streams: [LeadsDialEvent, LeadsContactEvent, LeadsMessageEvent, TelephonyCallEvent, BillingCreditEvent],
    log,
    lifecycle,
    outboxOn: conn,
    outboxLease: lease,
  });

  const clients = connectClients(svc);
  const useCases = buildUseCases(svc, stores, clients, events.outbox);
  startConsumers(svc, events, useCases);
  const scheduler = startWorkers(svc, lease, stores, useCases);

  const server = await serveGrpc(svc, [leadsService(useCases.api, log)]);
  log.info({ port: server.port, callingWindowDefault: cfg.CALLING_WINDOW_DEFAULT }, 'leads listening');
  return { port: server.port, lifecycle, log, scheduler, dialing: useCases.api.dialing, outbox: events.outbox };
}

runAsMain(module, 'leads', () => startLeads());
