// The campaign routes, read-only: `GET /campaigns`, `GET /campaigns/{id}`, `GET /campaigns/{id}/contacts`.
import type { ServiceClients } from '../../clients';
import { IdParam, PageQuery, Pagination, pagination } from '../../http/pagination';
import { defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import { campaignJson, contactJson } from './mappers';
import { Campaign, Contact } from './schemas';
import { lastConversations } from './shared';

/** Campaigns, read-only (the dashboard creates and starts them), with their contacts. */
export function campaignRoutes(clients: ServiceClients) {
  const campaignsTag = 'Campaigns';
  return [
    defineRoute({
      method: 'get',
      path: '/campaigns',
      tag: campaignsTag,
      summary: 'List campaigns',
      description:
        'Campaigns are created and started in the dashboard; the API reads them. Stats count the campaign’s contacts by status.',
      scopes: ['leads:read'],
      query: PageQuery,
      responses: {
        200: {
          description: 'A page of campaigns, newest first',
          schema: z.object({ campaigns: z.array(Campaign), pagination: Pagination }),
        },
      },
      handler: async ({ query }, { call }) => {
        const res = await clients.leads.listCampaigns({ page: { page: query.page, limit: query.limit } }, call);
        return {
          status: 200,
          body: {
            campaigns: res.campaigns.map(campaignJson),
            pagination: pagination(query, res.page),
          },
        };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/campaigns/{id}',
      tag: campaignsTag,
      summary: 'Get a campaign',
      scopes: ['leads:read'],
      params: IdParam,
      responses: { 200: { description: 'The campaign', schema: z.object({ campaign: Campaign }) } },
      errors: { 404: 'No such campaign for this tenant (`not_found`)' },
      handler: async ({ params }, { call }) => ({
        status: 200,
        body: { campaign: campaignJson((await clients.leads.getCampaign({ id: params.id }, call)).campaign) },
      }),
    }),
    defineRoute({
      method: 'get',
      path: '/campaigns/{id}/contacts',
      tag: campaignsTag,
      summary: 'List a campaign’s contacts',
      description:
        'Each with the transcript and analysis of its last answered call, as `GET /contacts/{id}` shows them.',
      scopes: ['leads:read'],
      params: IdParam,
      query: PageQuery,
      responses: {
        200: {
          description: 'A page of contacts, newest first',
          schema: z.object({ contacts: z.array(Contact), pagination: Pagination }),
        },
      },
      errors: { 404: 'No such campaign for this tenant (`not_found`)' },
      handler: async ({ params, query }, { call }) => {
        const res = await clients.leads.listCampaignContacts(
          { campaignId: params.id, page: { page: query.page, limit: query.limit } },
          call,
        );
        const last = await lastConversations(clients, res.contacts, call);
        return {
          status: 200,
          body: {
            contacts: res.contacts.map((c) => contactJson(c, c.lastCallId ? last.get(c.lastCallId) : undefined)),
            pagination: pagination(query, res.page),
          },
        };
      },
    }),
  ];
}
