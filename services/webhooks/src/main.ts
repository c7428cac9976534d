import {
  consumerGroup,
  ensureIndexes,
  EventSubscriber,
  openService,
  OutboundClient,
  OutboundFailed,
  OutboundRefused,
  runAsMain,
  SecretBox,
  serveGrpc,
  startEvents,
} from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import { readConfig } from './config';
import { deliverDomainEvents } from './events/consume';
import { webhooksService } from './grpc/webhooks-server';
import { DeliveryStore } from './store/delivery-store';
import { EndpointStore } from './store/endpoint-store';
import { DeliveryAttempts, ENDPOINT_CACHE_MS } from './usecases/delivery-attempts';
import type { Sender } from './usecases/ports';
import { Dispatcher } from './usecases/dispatcher';
import { Endpoints } from './usecases/endpoints';
import { FanOut } from './usecases/fanout';

/** A receiver's answer is read only this far: the status decides, the body is not used. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** Starts the webhooks service; returns its lifecycle so tests can stop it in-process. */
export async function startWebhooks(env: Record<string, string | undefined> = process.env) {
  const cfg = readConfig(env);
  // Signing secrets and the signatures made with them never reach a log line.
  const svc = await openService('webhooks', cfg, {
    redact: ['secret', '*.secret', 'headers["webhook-signature"]', '*.headers["webhook-signature"]'],
  });
  const { log, lifecycle, conn } = svc;
  const now = () => new Date();

  const endpoints = new EndpointStore(conn, { cacheTtlMs: cfg.WEBHOOK_ENDPOINT_CACHE_TTL_MS });
  const deliveries = new DeliveryStore(conn);
  await ensureIndexes(conn);

  const outbound = new OutboundClient({
    allow: cfg.OUTBOUND_ALLOWLIST,
    proxy: cfg.OUTBOUND_PROXY,
    maxResponseBytes: MAX_ANSWER_BYTES,
  });
  lifecycle.onStop('outbound client', () => outbound.close());
  const sender: Sender = {
    async post(url, headers, body, timeoutMs) {
      try {
        // A redirect is an answer (a failure to retry), never followed; a long answer is cut, not an error.
        const res = await outbound.send(url, {
          method: 'POST',
          headers,
          body,
          timeoutMs,
          redirects: 'return',
          oversize: 'truncate',
        });
        return {
          statusCode: res.status,
          ...(res.headers['retry-after'] !== undefined && { retryAfter: res.headers['retry-after'] }),
        };
      } catch (err) {
        if (err instanceof OutboundRefused) return { error: 'refused' }; // the tenant's URL
        if (err instanceof OutboundFailed) return { error: err.reason, ...(err.side === 'near' && { ours: true }) };
        return { error: 'network', ours: true }; // not the exchange's failure: ours
      }
    },
  };

  // A key ring: the current key seals, earlier ones (while a rotation is under way) still open.
  const secretBox = new SecretBox(
    [cfg.WEBHOOK_SECRETS_KEY, ...cfg.WEBHOOK_SECRETS_PREVIOUS_KEYS],
    'webhooks.signing-secret',
  );
  const operator = new Endpoints({
    endpoints,
    deliveries,
    wake: () => dispatcher.wake(),
    secrets: secretBox,
    checkUrl: (url) => outbound.checkUrl(url),
    rotationOverlapMs: cfg.WEBHOOK_ROTATION_OVERLAP,
    settleMs: ENDPOINT_CACHE_MS + 100,
    now,
  });
  const attempts = new DeliveryAttempts({
    endpoints,
    legacyBody: (messageId) => deliveries.legacyBody(messageId),
    signingSecrets: (endpoint, at) => operator.signingSecrets(endpoint, at),
    sender,
    log,
    now,
    schedule: cfg.WEBHOOK_RETRY_SCHEDULE,
    timeoutMs: cfg.WEBHOOK_TIMEOUT_MS,
    disableAfterMs: cfg.WEBHOOK_DISABLE_AFTER,
  });
  const dispatcher = new Dispatcher({
    attempt: (delivery) => attempts.attempt(delivery),
    deliveries,
    log,
    now,
    perEndpoint: cfg.WEBHOOK_ENDPOINT_CONCURRENCY,
    maxInFlight: cfg.WEBHOOK_MAX_IN_FLIGHT,
    firstWaitMs: cfg.WEBHOOK_FIRST_WAIT_MS,
    // What a replica that died held is sent again by another this long after it was taken.
    holdMs: 2 * cfg.WEBHOOK_TIMEOUT_MS + 30_000,
    attemptTimeoutMs: cfg.WEBHOOK_TIMEOUT_MS,
    sweepIntervalMs: cfg.WEBHOOK_SWEEP_INTERVAL_MS,
  });
  dispatcher.start();
  lifecycle.onStop('dispatcher', () => dispatcher.stop());

  // Webhooks only reads; it creates the streams it reads (idempotent, same settings as their
  // owners) so it can start before billing, leads or agents. Its producer sends dead letters.
  const { BillingCallEvent, BillingUsageEvent, LeadsContactEvent, AgentsEvent, TelephonyCallEvent } =
    voiceapi.events.v1;
  const { kafka, publisher } = await startEvents({
    service: 'webhooks',
    settings: cfg,
    streams: [BillingCallEvent, BillingUsageEvent, LeadsContactEvent, AgentsEvent, TelephonyCallEvent],
    log,
    lifecycle,
  });
  const fanOut = new FanOut({
    endpoints,
    first: (delivery) => dispatcher.first(delivery),
    insert: (delivery) => deliveries.insert(delivery),
    stored: (ids) => deliveries.stored(ids),
    now,
  });
  const consumer = deliverDomainEvents(
    new EventSubscriber(kafka, {
      group: consumerGroup('webhooks', 'fan-out'),
      log,
      publisher,
      concurrency: cfg.WEBHOOK_FANOUT_CONCURRENCY,
      keyOrder: false,
    }),
    fanOut,
  );
  consumer.start();
  // Hooks run in reverse: no new deliveries while the dispatcher hands back what it holds.
  lifecycle.onStop('fan-out consumer', () => consumer.stop());

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
  return { port: server.port, lifecycle, log, dispatcher, deliveries, endpoints };
}

runAsMain(module, 'webhooks', () => startWebhooks());
