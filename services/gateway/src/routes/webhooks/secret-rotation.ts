// The webhook secret route: `POST /webhooks/{webhookId}/rotate-secret`.
import type { ServiceClients } from '../../clients';
import { defineRoute, noBody } from '../../http/route';
import { z } from '../../http/zod';
import { CreatedWebhook, WebhookParam } from './schemas';
import { WEBHOOK_404 } from './shared';

/** Rotating an endpoint’s signing secret. */
export function webhookSecretRoutes(clients: ServiceClients) {
  return [
    defineRoute({
      method: 'post',
      path: '/webhooks/{webhookId}/rotate-secret',
      tag: 'Webhooks',
      summary: 'Rotate an endpoint’s signing secret',
      description:
        'The new secret is returned once. For 24 h deliveries carry two signatures, by the new and the old secret, so the receiver can switch at its own pace.',
      params: WebhookParam,
      body: noBody,
      responses: {
        200: {
          description: 'Rotated',
          schema: z.object({ webhook: z.object({ id: z.string(), secret: CreatedWebhook.shape.secret }) }),
        },
      },
      errors: WEBHOOK_404,
      handler: async ({ params }, { requestId }) => {
        const res = await clients.webhooks.rotateSecret({ endpointId: params.webhookId }, { requestId });
        return { status: 200, body: { webhook: { id: res.endpoint?.id ?? params.webhookId, secret: res.secret } } };
      },
    }),
  ];
}
