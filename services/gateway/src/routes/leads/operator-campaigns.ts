// The operator's campaign routes: `POST /tenants/{tenantId}/campaigns` and `POST /tenants/{tenantId}/campaigns/{campaignId}/start`.
import { nullIfNotFound } from '@voiceapi/kit/errors';
import { type CallContext } from '@voiceapi/kit/grpc';
import type { ServiceClients } from '../../clients';
import { withBodyFields } from '../../http/errors';
import { IdParam } from '../../http/pagination';
import { refusal } from '../../http/refusals';
import { defineRoute, noBody } from '../../http/route';
import { z } from '../../http/zod';
import type { OperatorUseCases } from '../../operator/operator';
import { TenantParam } from '../admin/schemas';
import { campaignCreateRequest, campaignJson } from './mappers';
import { operatorTenantCall, TENANT_404 } from './operator-shared';
import { Campaign, CampaignCreate } from './schemas';

/** Whether the tenant owns this number (telephony's answer). */
async function ownedNumber(clients: ServiceClients, phoneNumber: string, call: CallContext): Promise<boolean> {
  return Boolean((await nullIfNotFound(clients.telephony.getOwnedNumber({ phoneNumber }, call)))?.number);
}

/** Creating and starting a tenant’s API campaigns. */
export function campaignOperatorRoutes(clients: ServiceClients, op: OperatorUseCases) {
  const tenantCall = operatorTenantCall(op);
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
  ];
}
