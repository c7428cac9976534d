import { startEvents } from '@voiceapi/kit/events';
import { Lease } from '@voiceapi/kit/mongo';
import { openService, runAsMain, serveGrpc } from '@voiceapi/kit/service';
import { voiceapi } from '@voiceapi/proto';
import { readConfig } from './config';
import { telephonyService } from './grpc/telephony-server';
import { connectClients } from './wiring/clients';
import { openStores } from './wiring/stores';
import { buildUseCases } from './wiring/usecases';
import { DialWakes, startConsumers, startWorkers } from './wiring/workers';

/** Starts the telephony service; returns its lifecycle so tests can stop it in-process. */
export async function startTelephony(env: Record<string, string | undefined> = process.env) {
  const cfg = readConfig(env);
  // Phone numbers are personal data; the recording secret never leaves this process.
  const svc = await openService('telephony', cfg, {
    redact: ['phone', '*.phone', 'fromNumber', '*.fromNumber', 'toNumber', '*.toNumber', 'token', '*.token'],
  });
  const { log, lifecycle, conn } = svc;
  const stores = await openStores(svc);

  // Telephony owns the call streams, and creates leads' dial stream too (idempotent) so it can start before leads.
  const { TelephonyCallEvent, TelephonyCallFeedEvent, LeadsDialEvent } = voiceapi.events.v1;
  // The background workers and the outbox run on one replica at a time under one shared lease (an idle replica
  // renews one lease); every replica dispatches the dials it holds.
  const lease = new Lease(conn, 'telephony-dispatcher', cfg.INSTANCE_ID);
  const events = await startEvents({
    service: 'telephony',
    settings: cfg,
    streams: [TelephonyCallEvent, TelephonyCallFeedEvent, LeadsDialEvent],
    log,
    lifecycle,
    outboxOn: conn,
    outboxLease: lease,
  });

  const clients = connectClients(svc);
  const wakes = new DialWakes();
  const useCases = buildUseCases(svc, stores, clients, events.outbox, wakes);
  const { dispatching, recovery } = startWorkers(svc, lease, stores, useCases, wakes);

  const server = await serveGrpc(svc, [telephonyService(useCases.api, log)]);
  // Feed readers answer at once on stop (before the server drains), so gateway streams move on to another replica.
  lifecycle.onStop('call feed readers', () => stores.waiters.stop());
  startConsumers(svc, events, useCases, dispatching);

  const { carrier, dialer, runner } = useCases;
  log.info({ port: server.port, carrier: carrier.name, speedup: cfg.CARRIER_SIMULATOR_SPEEDUP }, 'telephony listening');
  return { port: server.port, lifecycle, log, dialer, recovery, outbox: events.outbox, runner };
}

runAsMain(module, 'telephony', () => startTelephony());
