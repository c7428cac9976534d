import { orFallback } from '@voiceapi/kit/errors';
import { contextOf, type PromiseClient, type TenantScope } from '@voiceapi/kit/grpc';
import { voiceapi } from '@voiceapi/proto';
import { LRUCache } from 'lru-cache';
import type { StatusChangeReaders } from '../usecases/ports';

type WebhooksClient = Pick<PromiseClient<typeof voiceapi.webhooks.v1.WebhooksServiceService>, 'listSubscribedTypes'>;

/** The webhook event type a contact's status change becomes. */
const STATUS_CHANGED = 'contact.status_changed';
/** How long an answer may take: a contact's move waits for it only when its tenant is not known. */
const ASK_TIMEOUT_MS = 500;
/** Tenants remembered at once (the least recently asked are forgotten, and asked again). */
const MAX_TENANTS = 100_000;

/**
 * Whether each tenant has an endpoint for `contact.status_changed` (`ListSubscribedTypes`), cached for `ttlMs`.
 * Webhooks away, or too old to know the call during an upgrade: announced, and counted in `voiceapi.fallbacks`.
 */
export function webhookReaders(webhooks: WebhooksClient, ttlMs: number): StatusChangeReaders {
  // A time of 0 asks every time (lru-cache reads a ttl of 0 as "never expires").
  const known = ttlMs > 0 ? new LRUCache<string, Promise<boolean>>({ max: MAX_TENANTS, ttl: ttlMs }) : undefined;
  const ask = (scope: TenantScope): Promise<boolean> =>
    orFallback(
      { dependency: 'webhooks', operation: 'ListSubscribedTypes' },
      async () => {
        const { types } = await webhooks.listSubscribedTypes({}, contextOf(scope), {
          timeoutMs: ASK_TIMEOUT_MS,
          waitForReady: false,
        });
        return types.includes(STATUS_CHANGED);
      },
      () => true,
    );
  return {
    wanted(scope) {
      const remembered = known?.get(scope.tenantId);
      if (remembered) return remembered;
      const answer = ask(scope);
      known?.set(scope.tenantId, answer);
      return answer;
    },
  };
}
