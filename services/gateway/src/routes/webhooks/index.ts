import type { OpenAPIRegistry } from '@asteasolutions/zod-to-openapi';
import type { ServiceClients } from '../../clients';
import { withBodyFields } from '../../http/errors';
import { defineRoute, noBody } from '../../http/route';
import { z } from '../../http/zod';
import type { OperatorUseCases } from '../../operator/operator';
import { TenantParam } from '../admin/schemas';
import { deliveryJson, webhookJson } from './mappers';
import {
  ChangedWebhook,
  CreatedWebhook,
  DeliveriesQuery,
  Delivery,
  RecoverBody,
  Webhook,
  WEBHOOK_PAYLOADS,
  WebhookChange,
  WebhookCreate,
  WebhookParam,
} from './schemas';

const WEBHOOK_404 = { 404: 'No such webhook (`not_found`)' };

/** The dashboard's webhook settings: register, list, change, pause, delete, read deliveries, recover, rotate the secret. */
export function webhookOperatorRoutes(clients: ServiceClients, op: OperatorUseCases) {
  // Operators act live for the tenant (the services refuse a call without a key mode).
  const tenantCall = async (tenantId: string, requestId: string) => {
    await op.assertTenant(tenantId);
    return { requestId, tenantId, keyMode: 'live' as const };
  };
  return [
    defineRoute({
      method: 'post',
      path: '/tenants/{tenantId}/webhooks',
      tag: 'Webhooks',
      summary: 'Register a webhook endpoint',
      description:
        'Deliveries are signed per Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature`) with the secret returned here, once. ' +
        'The address must be `https:` and public unless the operator allow-lists it (`OUTBOUND_ALLOWLIST`); its host is resolved and checked again at every delivery.',
      params: TenantParam,
      body: WebhookCreate,
      responses: { 201: { description: 'Registered', schema: z.object({ webhook: CreatedWebhook }) } },
      errors: { 404: 'No such tenant (`not_found`)', 422: 'The address is not allowed (`url_not_allowed`)' },
      handler: async ({ params, body }, { requestId }) => {
        const res = await withBodyFields(
          clients.webhooks.registerEndpoint(
            { url: body.url, events: body.events ?? [] },
            await tenantCall(params.tenantId, requestId),
          ),
        );
        return { status: 201, body: { webhook: { ...webhookJson(res.endpoint), secret: res.secret } } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/tenants/{tenantId}/webhooks',
      tag: 'Webhooks',
      summary: 'A tenant’s webhook endpoints (no secrets)',
      params: TenantParam,
      responses: { 200: { description: 'Oldest first', schema: z.object({ webhooks: z.array(Webhook) }) } },
      errors: { 404: 'No such tenant (`not_found`)' },
      handler: async ({ params }, { requestId }) => {
        const res = await clients.webhooks.listEndpoints({}, await tenantCall(params.tenantId, requestId));
        return { status: 200, body: { webhooks: res.endpoints.map(webhookJson) } };
      },
    }),
    defineRoute({
      method: 'patch',
      path: '/webhooks/{webhookId}',
      tag: 'Webhooks',
      summary: 'Change, pause or resume a webhook endpoint',
      description:
        'A new `url` is checked like a new endpoint’s. `enabled: false` pauses: deliveries wait (answered once no delivery can start on the old setting). ' +
        '`enabled: true` resumes: what waited goes out, oldest first; an endpoint disabled by failures is enabled again.',
      params: WebhookParam,
      body: WebhookChange,
      responses: { 200: { description: 'Changed', schema: z.object({ webhook: ChangedWebhook }) } },
      errors: { ...WEBHOOK_404, 422: 'The address is not allowed (`url_not_allowed`)' },
      handler: async ({ params, body }, { requestId }) => {
        const res = await withBodyFields(
          clients.webhooks.updateEndpoint(
            {
              endpointId: params.webhookId,
              ...(body.url !== undefined && { url: body.url }),
              events: body.events ?? [],
              setEvents: body.events !== undefined,
              ...(body.enabled !== undefined && { enabled: body.enabled }),
            },
            { requestId },
          ),
        );
        const { id, url, events, status } = webhookJson(res.endpoint);
        return { status: 200, body: { webhook: { id, url, events, status } } };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/webhooks/{webhookId}',
      tag: 'Webhooks',
      summary: 'Delete a webhook endpoint',
      description:
        'No delivery is attempted after the answer (one already on the wire may finish). Its delivery log stays readable for 30 days.',
      params: WebhookParam,
      responses: { 204: { description: 'Deleted' } },
      errors: WEBHOOK_404,
      handler: async ({ params }, { requestId }) => {
        await clients.webhooks.deleteEndpoint({ endpointId: params.webhookId }, { requestId });
        return { status: 204 };
      },
    }),
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
