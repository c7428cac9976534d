import { SecretBox } from '@voiceapi/kit/crypto';
import { OutboundClient, OutboundFailed, OutboundRefused } from '@voiceapi/kit/http';
import type { OpenedService } from '@voiceapi/kit/service';
import type { Config } from '../config';
import { DeliveryAttempts, ENDPOINT_CACHE_MS } from '../usecases/delivery-attempts';
import { Dispatcher } from '../usecases/dispatcher';
import { Endpoints } from '../usecases/endpoints';
import { FanOut } from '../usecases/fanout';
import type { Sender } from '../usecases/ports';
import type { Stores } from './stores';

/** A receiver's answer is read only this far: the status decides, the body is not used. */
const MAX_ANSWER_BYTES = 64 * 1024;

export type UseCases = ReturnType<typeof buildUseCases>;

/** The endpoints the operator API keeps, and the deliveries' attempts, dispatch and fan-out. */
export function buildUseCases({ cfg, log, lifecycle }: OpenedService<Config>, { endpoints, deliveries }: Stores) {
  const now = () => new Date();
  const outbound = new OutboundClient({
    allow: cfg.OUTBOUND_ALLOWLIST,
    proxy: cfg.OUTBOUND_PROXY,
    maxResponseBytes: MAX_ANSWER_BYTES,
  });
  lifecycle.onStop('outbound client', () => outbound.close());
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
    sender: outboundSender(outbound),
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
  const fanOut = new FanOut({
    endpoints,
    first: (delivery) => dispatcher.first(delivery),
    insert: (delivery) => deliveries.insert(delivery),
    stored: (ids) => deliveries.stored(ids),
    now,
  });
  return { secretBox, operator, dispatcher, fanOut };
}

/** Deliveries' POSTs through the outbound client; an answer or a failure is an outcome, never thrown. */
function outboundSender(outbound: OutboundClient): Sender {
  return {
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
}
