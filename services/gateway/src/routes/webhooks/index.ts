import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { ServiceClients } from '../../clients';
import type { OperatorUseCases } from '../../operator/operator';
import { webhookDeliveryRoutes } from './deliveries';
import { webhookEndpointRoutes } from './endpoints';
import { WEBHOOK_PAYLOADS } from './schemas';
import { webhookSecretRoutes } from './secret-rotation';

/** The dashboard's webhook settings: register, list, change, pause, delete, read deliveries, recover, rotate the secret. */
export function webhookOperatorRoutes(clients: ServiceClients, op: OperatorUseCases) {
  // In this order: Express matches routes in the order they are mounted, and the OpenAPI document lists them so.
  return [...webhookEndpointRoutes(clients, op), ...webhookDeliveryRoutes(clients), ...webhookSecretRoutes(clients)];
}

/** The payloads tenants receive, in the tenant document's `webhooks` section. */
export function registerWebhookPayloads(registry: OpenAPIRegistry): void {
  for (const p of WEBHOOK_PAYLOADS) {
    // Named in components too: the generator refers to each payload there but adds only those
    // that paths use, and SDK generators refuse a reference that does not resolve.
    registry.register(p.name, p.schema);
    registry.registerWebhook({
      method: 'post',
      path: p.type,
      summary: p.summary,
      description:
        'POSTed as JSON with `webhook-id` (the same for every attempt), `webhook-timestamp` (seconds) and `webhook-signature` (`v1,<base64>`, two during a secret rotation). Verify with a Standard Webhooks library and the endpoint’s secret; answer 2xx within 15 s.',
      request: { body: { content: { 'application/json': { schema: p.schema } } } },
      responses: { 200: { description: 'Received (any 2xx)' }, 410: { description: 'Gone: the endpoint is disabled' } },
      // Sent by the platform, authenticated by its signature (above), not by a key of the tenant's.
      security: [],
    });
  }
}
