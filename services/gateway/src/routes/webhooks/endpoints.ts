// The webhook endpoint routes: `POST`/`GET /tenants/{tenantId}/webhooks`, `PATCH`/`DELETE /webhooks/{webhookId}`.
import type { ServiceClients } from '../../clients';
import { withBodyFields } from '../../http/errors';
import { defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import type { OperatorUseCases } from '../../operator/operator';
import { TenantParam } from '../admin/schemas';
import { webhookJson } from './mappers';
import { ChangedWebhook, CreatedWebhook, Webhook, WebhookChange, WebhookCreate, WebhookParam } from './schemas';
import { WEBHOOK_404 } from './shared';

/** Registering and listing a tenant’s webhook endpoints; changing, pausing, resuming and deleting one. */
export function webhookEndpointRoutes(clients: ServiceClients, op: OperatorUseCases) {
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
  ];
}
