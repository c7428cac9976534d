// The webhook delivery routes: `GET /webhooks/{webhookId}/deliveries` and `POST /webhooks/{webhookId}/recover`.
import type { ServiceClients } from '../../clients';
import { withBodyFields } from '../../http/errors';
import { defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import { deliveryJson } from './mappers';
import { DeliveriesQuery, Delivery, RecoverBody, WebhookParam } from './schemas';
import { WEBHOOK_404 } from './shared';

/** An endpoint’s deliveries, and delivering again those of a window that did not succeed. */
export function webhookDeliveryRoutes(clients: ServiceClients) {
  return [
    defineRoute({
      method: 'get',
      path: '/webhooks/{webhookId}/deliveries',
      tag: 'Webhooks',
      summary: 'An endpoint’s deliveries, newest first',
      description:
        'Retries follow the schedule immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h; a 2xx ends a delivery, 410 disables the endpoint, and an endpoint with no success for 5 days is disabled.',
      params: WebhookParam,
      query: DeliveriesQuery,
      responses: { 200: { description: 'Deliveries', schema: z.object({ deliveries: z.array(Delivery) }) } },
      errors: WEBHOOK_404,
      handler: async ({ params, query }, { requestId }) => {
        const res = await clients.webhooks.listDeliveries(
          { endpointId: params.webhookId, limit: query.limit, ...(query.status && { status: query.status }) },
          { requestId },
        );
        return { status: 200, body: { deliveries: res.deliveries.map(deliveryJson) } };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/webhooks/{webhookId}/recover',
      tag: 'Webhooks',
      summary: 'Deliver again every event of a window that did not succeed',
      description:
        'Failed and still-pending deliveries created in [`since`, `until`) start the retry schedule again, now; a disabled endpoint is enabled again. Receivers see the same `webhook-id` and body as before.',
      params: WebhookParam,
      body: RecoverBody,
      responses: { 202: { description: 'Queued', schema: z.object({ queued: z.number().int() }) } },
      errors: { ...WEBHOOK_404, 400: '`since` is not before `until` (`validation_error`)' },
      handler: async ({ params, body }, { requestId }) => {
        const res = await withBodyFields(
          clients.webhooks.recoverDeliveries(
            {
              endpointId: params.webhookId,
              since: new Date(body.since),
              ...(body.until && { until: new Date(body.until) }),
            },
            { requestId },
          ),
        );
        return { status: 202, body: { queued: res.queued } };
      },
    }),
  ];
}
