// The routes of a contact's calls: `GET /contacts/{id}/calls` and `GET /contacts/{id}/calls/{callId}`.
import type { ServiceClients } from '../../clients';
import { Pagination, pagination } from '../../http/pagination';
import { defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import { callDetailJson, callJson } from './mappers';
import { CallDetail, CallSummary, ContactCallParams, ContactCallsQuery } from './schemas';

/** A contact’s calls (the contact checked with leads first), and one of them with its transcript and analysis. */
export function contactCallRoutes(clients: ServiceClients) {
  const contacts = 'Contacts';
  return [
    defineRoute({
      method: 'get',
      path: '/contacts/{id}/calls',
      tag: contacts,
      summary: 'A contact’s calls',
      scopes: ['leads:read'],
      params: ContactCallParams.pick({ id: true }),
      query: ContactCallsQuery,
      responses: {
        200: {
          description: 'A page of the contact’s calls, newest first',
          schema: z.object({ calls: z.array(CallSummary), pagination: Pagination }),
        },
      },
      errors: { 404: 'No such contact for this tenant (`not_found`)' },
      handler: async ({ params, query }, { call }) => {
        await clients.leads.getContact({ id: params.id }, call);
        const res = await clients.telephony.listContactCalls(
          { contactId: params.id, page: { page: query.page, limit: query.limit } },
          call,
        );
        return { status: 200, body: { calls: res.calls.map(callJson), pagination: pagination(query, res.page) } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/contacts/{id}/calls/{callId}',
      tag: contacts,
      summary: 'One call of a contact, with its transcript and analysis',
      scopes: ['leads:read'],
      params: ContactCallParams,
      responses: { 200: { description: 'The call', schema: z.object({ call: CallDetail }) } },
      errors: { 404: 'No such contact for this tenant, or no such call of it (`not_found`)' },
      handler: async ({ params }, { call }) => {
        await clients.leads.getContact({ id: params.id }, call);
        return {
          status: 200,
          body: {
            call: callDetailJson(
              await clients.telephony.getCall({ callId: params.callId, contactId: params.id }, call),
            ),
          },
        };
      },
    }),
  ];
}
