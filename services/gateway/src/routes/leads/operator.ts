import { nullIfNotFound, type CallContext } from '@voiceapi/kit';
import type { ServiceClients } from '../../clients';
import { IdParam } from '../../http/pagination';
import { withBodyFields } from '../../http/errors';
import { refusal } from '../../http/refusals';
import { defineRoute, noBody } from '../../http/route';
import { z } from '../../http/zod';
import type { OperatorUseCases } from '../../operator/operator';
import { TenantParam } from '../admin/schemas';
import { campaignCreateRequest, campaignJson, dncJson, messageJson, templateJson } from './mappers';
import {
  Campaign,
  CampaignCreate,
  DoNotCallEntry,
  Message,
  MessagesQuery,
  PhoneBody,
  Template,
  TemplateCreate,
} from './schemas';

const TENANT_404 = { 404: 'No such tenant (`not_found`)' };

/** Whether the tenant owns this number (telephony's answer). */
async function ownedNumber(clients: ServiceClients, phoneNumber: string, call: CallContext): Promise<boolean> {
  return Boolean((await nullIfNotFound(clients.telephony.getOwnedNumber({ phoneNumber }, call)))?.number);
}
const DnCAnswer = z.object({
  entry: DoNotCallEntry,
  created: z.boolean().openapi({ description: 'False when the number was on the list already' }),
});

/** What the dashboard does for outbound: campaigns, omni templates, do-not-call lists, the message record. */
export function leadsOperatorRoutes(clients: ServiceClients, op: OperatorUseCases) {
  // Operators act live for the tenant (the services refuse a call without a key mode).
  const tenantCall = async (tenantId: string, requestId: string) => {
    await op.assertTenant(tenantId);
    return { requestId, tenantId, keyMode: 'live' as const };
  };
  return [
    defineRoute({
      method: 'post',
      path: '/tenants/{tenantId}/campaigns',
      tag: 'Campaigns',
      summary: 'Create an API campaign',
      description:
        'Created as `draft`; start it to accept leads. Defaults: every channel, the calling window `CALLING_WINDOW_DEFAULT` (08:00–21:00 in the called party’s time zone), `maxCallSeconds` 600, `maxAttempts` 3, `retryAfterMinutes` 60.',
      params: TenantParam,
      body: CampaignCreate,
      responses: { 201: { description: 'Created', schema: z.object({ campaign: Campaign }) } },
      errors: { ...TENANT_404, 422: '`fromNumber` is not a number the tenant owns (`phone_not_owned`)' },
      handler: async ({ params, body }, { requestId }) => {
        const call = await tenantCall(params.tenantId, requestId);
        // Telephony knows the tenant's numbers; leads stores the campaign.
        if (body.fromNumber !== undefined && !(await ownedNumber(clients, body.fromNumber, call))) {
          throw refusal('phone_not_owned', `${body.fromNumber} is not a number the tenant owns`, [
            { path: 'body.fromNumber', message: 'not a number the tenant owns' },
          ]);
        }
        const res = await withBodyFields(clients.leads.createCampaign(campaignCreateRequest(body), call));
        return { status: 201, body: { campaign: campaignJson(res.campaign) } };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/tenants/{tenantId}/campaigns/{campaignId}/start',
      tag: 'Campaigns',
      summary: 'Start a campaign',
      description: 'draft → running. Starting a running campaign answers it unchanged.',
      params: TenantParam.extend({ campaignId: IdParam.shape.id }),
      body: noBody,
      responses: { 200: { description: 'Running', schema: z.object({ campaign: Campaign }) } },
      errors: { 404: 'No such tenant or campaign (`not_found`)' },
      handler: async ({ params }, { requestId }) => {
        const res = await clients.leads.startCampaign(
          { id: params.campaignId },
          await tenantCall(params.tenantId, requestId),
        );
        return { status: 200, body: { campaign: campaignJson(res.campaign) } };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/tenants/{tenantId}/omni-templates',
      tag: 'Omni templates',
      summary: 'Create a WhatsApp or email template',
      description:
        'Placeholders are read from `body` and `subject`: `{{1}}`, `{{2}}` for WhatsApp, `{{key}}` for email.',
      params: TenantParam,
      body: TemplateCreate,
      responses: { 201: { description: 'Created', schema: z.object({ template: Template }) } },
      errors: TENANT_404,
      handler: async ({ params, body }, { requestId }) => {
        const res = await withBodyFields(
          clients.leads.createTemplate(body, await tenantCall(params.tenantId, requestId)),
        );
        return { status: 201, body: { template: templateJson(res.template ?? missing('template')) } };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/do-not-call',
      tag: 'Do not call',
      summary: 'Add a number to the platform’s do-not-call list',
      description:
        'Applies to every tenant, at ingest and at every dial. Adding a listed number again answers its entry.',
      operationId: 'addPlatformDoNotCall',
      body: PhoneBody,
      responses: { 201: { description: 'On the list', schema: DnCAnswer } },
      handler: async ({ body }, { requestId }) => {
        // The platform list belongs to no tenant: the call carries none.
        const res = await withBodyFields(clients.leads.addPlatformDoNotCall({ phone: body.phone }, { requestId }));
        return { status: 201, body: { entry: dncJson(res.entry), created: res.created } };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/tenants/{tenantId}/do-not-call',
      tag: 'Do not call',
      summary: 'Add a number to a tenant’s do-not-call list',
      operationId: 'addTenantDoNotCall',
      params: TenantParam,
      body: PhoneBody,
      responses: { 201: { description: 'On the list', schema: DnCAnswer } },
      errors: TENANT_404,
      handler: async ({ params, body }, { requestId }) => {
        const res = await withBodyFields(
          clients.leads.addTenantDoNotCall({ phone: body.phone }, await tenantCall(params.tenantId, requestId)),
        );
        return { status: 201, body: { entry: dncJson(res.entry), created: res.created } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/tenants/{tenantId}/messages',
      tag: 'Omni templates',
      summary: 'What the message adapter sent',
      description:
        'The rendered WhatsApp and email messages, newest first (at most 100). With the default adapter nothing is sent live: this is the record.',
      operationId: 'listTenantMessages',
      params: TenantParam,
      query: MessagesQuery,
      responses: { 200: { description: 'Messages, newest first', schema: z.object({ messages: z.array(Message) }) } },
      errors: TENANT_404,
      handler: async ({ params, query }, { requestId }) => {
        const res = await clients.leads.listMessages(
          { channel: query.channel ?? '', limit: 100 },
          await tenantCall(params.tenantId, requestId),
        );
        return { status: 200, body: { messages: res.messages.map(messageJson) } };
      },
    }),
  ];
}

function missing(what: string): never {
  throw new Error(`leads service answered without a ${what}`);
}
