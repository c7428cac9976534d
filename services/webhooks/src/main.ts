import { startEvents } from '@voiceapi/kit/events';
import { openService, runAsMain, serveGrpc } from '@voiceapi/kit/service';
import { voiceapi } from '@voiceapi/proto';
import { readConfig } from './config';
import { webhooksService } from './grpc/webhooks-server';
import { openStores } from './wiring/stores';
import { buildUseCases } from './wiring/usecases';
import { startConsumers, startWorkers } from './wiring/workers';

/** Starts the webhooks service; returns its lifecycle so tests can stop it in-process. */
export async function startWebhooks(env: Record<string, string | undefined> = process.env) {
  const cfg = readConfig(env);
  // Signing secrets and the signatures made with them never reach a log line.
  const svc = await openService('webhooks', cfg, {
    redact: ['secret', '*.secret', 'headers["webhook-signature"]', '*.headers["webhook-signature"]'],
  });
  const { log, lifecycle } = svc;
  const stores = await openStores(svc);
  const useCases = buildUseCases(svc, stores);
  startWorkers(svc, useCases);

  // Webhooks only reads; it creates the streams it reads (idempotent, same settings as their
  // owners) so it can start before billing, leads or agents. Its producer sends dead letters.
  const { BillingCallEvent, BillingUsageEvent, LeadsContactEvent, AgentsEvent, TelephonyCallEvent } =
    voiceapi.events.v1;
  const events = await startEvents({
    service: 'webhooks',
    settings: cfg,
    streams: [BillingCallEvent, BillingUsageEvent, LeadsContactEvent, AgentsEvent, TelephonyCallEvent],
    log,
    lifecycle,
  });
  startConsumers(svc, events, useCases);

  const { secretBox, operator, dispatcher } = useCases;
  const server = await serveGrpc(svc, [webhooksService(operator, log)]);
  if (secretBox.rotating) {
    // Moves every stored secret onto the current key; once it logs none unreadable, the earlier keys can go.
    void operator
      .resealSecrets()
      .then((r) => log.info(r, 'signing secrets sealed again with the current WEBHOOK_SECRETS_KEY'))
      .catch((err: unknown) => log.warn({ err }, 'the re-seal pass failed; it runs again at the next start'));
  }
  log.info(
    {
      port: server.port,
      schedule: cfg.WEBHOOK_RETRY_SCHEDULE,
      allowListed: cfg.OUTBOUND_ALLOWLIST.length,
      proxied: cfg.OUTBOUND_PROXY !== '',
    },
    'webhooks listening',
  );
  return { port: server.port, lifecycle, log, dispatcher, deliveries: stores.deliveries, endpoints: stores.endpoints };
}

runAsMain(module, 'webhooks', () => startWebhooks());
