// The routes calling the tenant's own API through an agent: `POST /inbound-agents/{id}/sync-doctors` and
// `POST /inbound-agents/{id}/crm/lookup`.
import type { ServiceClients } from '../../clients';
import { IdParam } from '../../http/pagination';
import { defineRoute, noBody } from '../../http/route';
import { doctorJson } from './mappers';
import { LookupBody, LookupResult, SyncResult } from './schemas';

const CUSTOM_API_ERRORS = {
  404: 'No such agent for this tenant (`not_found`)',
  422: 'The agent has no custom API (`custom_api_not_configured`), or its address resolves to a private, loopback, link-local or metadata address (`url_not_allowed`)',
  502: 'The tenant’s API failed, timed out, answered more than 1 MiB, or answered something other than the documented JSON (`custom_api_error`)',
};
/** The agent's own timeout is at most 15 s; the gateway waits a little longer for the service's answer. */
const CUSTOM_API_DEADLINE_MS = 17_000;

/** Reading the doctors from, and looking a caller up in, the tenant’s API the agent names. */
export function customApiRoutes(clients: ServiceClients) {
  const tag = 'Inbound agents';
  return [
    defineRoute({
      method: 'post',
      path: '/inbound-agents/{id}/sync-doctors',
      tag,
      summary: 'Read the doctors from the tenant’s API',
      operationId: 'syncInboundAgentDoctors',
      description:
        'Calls `GET {customApiBaseUrl}/doctors?branchId=` with the agent’s bearer secret and timeout, and keeps the answer on the agent. Takes no body (or `{}`).',
      scopes: ['inbound:write'],
      params: IdParam,
      body: noBody,
      responses: { 200: { description: 'The doctors as the tenant’s API listed them', schema: SyncResult } },
      errors: CUSTOM_API_ERRORS,
      handler: async ({ params }, { call }) => {
        const res = await clients.agents.syncDoctors({ id: params.id }, call, { timeoutMs: CUSTOM_API_DEADLINE_MS });
        return {
          status: 200,
          body: {
            doctors: res.doctors.map(doctorJson),
            doctorsLastSyncedAt: (res.doctorsLastSyncedTime ?? new Date(0)).toISOString(),
          },
        };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/inbound-agents/{id}/crm/lookup',
      tag,
      summary: 'Look a caller up in the tenant’s CRM',
      operationId: 'lookupInboundAgentCrm',
      description:
        'Calls `POST {customApiBaseUrl}/crm/lookup { phone }` with the agent’s bearer secret and timeout, without a live call.',
      scopes: ['inbound:write'],
      params: IdParam,
      body: LookupBody,
      responses: { 200: { description: 'What the tenant’s API answered', schema: LookupResult } },
      errors: CUSTOM_API_ERRORS,
      handler: async ({ params, body }, { call }) => {
        const res = await clients.agents.crmLookup({ id: params.id, phone: body.phone }, call, {
          timeoutMs: CUSTOM_API_DEADLINE_MS,
        });
        return { status: 200, body: { found: res.found, record: res.record ?? null } };
      },
    }),
  ];
}
