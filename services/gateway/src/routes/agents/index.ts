import type { ServiceClients } from '../../clients';
import { withBodyFields } from '../../http/errors';
import { IdParam, PageQuery, Pagination, pagination } from '../../http/pagination';
import { defineRoute, noBody } from '../../http/route';
import { z } from '../../http/zod';
import { agentFields, agentJson, doctorJson } from './mappers';
import {
  ActivateBody,
  ActivateResult,
  Agent,
  AgentCreate,
  AgentEnvelope,
  AgentPatch,
  LookupBody,
  LookupResult,
  SyncResult,
} from './schemas';

const CUSTOM_API_ERRORS = {
  404: 'No such agent for this tenant (`not_found`)',
  422: 'The agent has no custom API (`custom_api_not_configured`), or its address resolves to a private, loopback, link-local or metadata address (`url_not_allowed`)',
  502: 'The tenant’s API failed, timed out, answered more than 1 MiB, or answered something other than the documented JSON (`custom_api_error`)',
};
/** The agent's own timeout is at most 15 s; the gateway waits a little longer for the service's answer. */
const CUSTOM_API_DEADLINE_MS = 17_000;

/** Healthcare inbound agents (`inbound:read`, `inbound:write`), owned by the agents service. */
export function agentRoutes(clients: ServiceClients) {
  const tag = 'Inbound agents';
  const notFound = { 404: 'No such agent for this tenant (`not_found`)' };
  return [
    defineRoute({
      method: 'get',
      path: '/inbound-agents',
      tag,
      summary: 'List inbound agents',
      operationId: 'listInboundAgents',
      scopes: ['inbound:read'],
      query: PageQuery,
      responses: {
        200: {
          description: 'A page of agents, newest first',
          schema: z.object({ agents: z.array(Agent), pagination: Pagination }),
        },
      },
      handler: async ({ query }, { call }) => {
        const res = await clients.agents.listAgents({ page: { page: query.page, limit: query.limit } }, call);
        return {
          status: 200,
          body: {
            agents: res.agents.map(agentJson),
            pagination: pagination({
              page: query.page,
              limit: query.limit,
              total: res.page?.total ?? 0,
              hasMore: res.page?.hasMore ?? false,
            }),
          },
        };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/inbound-agents',
      tag,
      summary: 'Create an inbound agent',
      operationId: 'createInboundAgent',
      description:
        'The agent is created `inactive` with `inboundScriptStatus` `none`: generate its script, then activate it. Checks: the number is the tenant’s (422 `phone_not_owned`), ' +
        'the company (422 `company_not_found`; omitted: the latest company), every knowledge document (422 `knowledge_document_not_found`), the scope’s fields (400), ' +
        'one scope per number (409 `phone_scope_conflict`), and the custom API address’s form (422 `url_not_allowed`; its name is resolved and checked at each call).',
      scopes: ['inbound:write'],
      body: AgentCreate,
      responses: { 201: { description: 'Created, inactive', schema: AgentEnvelope } },
      errors: {
        409: 'Another agent on the number has a different appointment scope (`phone_scope_conflict`)',
        422: '`phone_not_owned`, `company_not_found`, `knowledge_document_not_found` or `url_not_allowed`',
      },
      handler: async ({ body }, { call }) => {
        const res = await withBodyFields(clients.agents.createAgent({ fields: agentFields(body).fields }, call));
        return { status: 201, body: { agent: agentJson(res.agent) } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/inbound-agents/{id}',
      tag,
      summary: 'Get an inbound agent, with its script',
      operationId: 'getInboundAgent',
      scopes: ['inbound:read'],
      params: IdParam,
      responses: { 200: { description: 'The agent', schema: AgentEnvelope } },
      errors: notFound,
      handler: async ({ params }, { call }) => ({
        status: 200,
        body: { agent: agentJson((await clients.agents.getAgent({ id: params.id }, call)).agent) },
      }),
    }),
    defineRoute({
      method: 'patch',
      path: '/inbound-agents/{id}',
      tag,
      summary: 'Update an inbound agent',
      operationId: 'updateInboundAgent',
      description:
        'Send only the fields to change, checked as on create; `null` removes `branchId`, `doctorId`, `companyId`, `customApiBaseUrl` or `customApiSecret`. `status` and `inboundScriptStatus` cannot be set (400): use activate and generate-script.',
      scopes: ['inbound:write'],
      params: IdParam,
      body: AgentPatch,
      responses: { 200: { description: 'The updated agent', schema: AgentEnvelope } },
      errors: {
        ...notFound,
        409: '`phone_scope_conflict`',
        422: '`phone_not_owned`, `company_not_found`, `knowledge_document_not_found` or `url_not_allowed`',
      },
      handler: async ({ params, body }, { call }) => {
        const { fields, clearFields } = agentFields(body);
        const res = await withBodyFields(clients.agents.updateAgent({ id: params.id, fields, clearFields }, call));
        return { status: 200, body: { agent: agentJson(res.agent) } };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/inbound-agents/{id}/activate',
      tag,
      summary: 'Activate or deactivate an inbound agent',
      operationId: 'activateInboundAgent',
      description:
        '`activate: true` needs a number the tenant still owns (422 `phone_not_owned`) and a `ready` script (409 `script_not_ready`); `activate: false` works from any state.',
      scopes: ['inbound:write'],
      params: IdParam,
      body: ActivateBody,
      responses: { 200: { description: 'The agent and its new status', schema: ActivateResult } },
      errors: {
        ...notFound,
        409: 'The script is not ready (`script_not_ready`)',
        422: 'The number is not the tenant’s (`phone_not_owned`)',
      },
      handler: async ({ params, body }, { call }) => {
        const agent = agentJson(
          (await clients.agents.activateAgent({ id: params.id, activate: body.activate }, call)).agent,
        );
        return { status: 200, body: { agent, status: agent.status } };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/inbound-agents/{id}/generate-script',
      tag,
      summary: 'Generate the agent’s script',
      operationId: 'generateInboundAgentScript',
      description:
        'Answers 202 at once with `inboundScriptStatus` `generating`; the script is written in the background from the company profile, the greeting and the linked documents’ text, ' +
        'then the status is `ready` (the script, with its sources, is in the agent’s detail) or `error` (`scriptError` says why). Asking again restarts it. Takes no body (or `{}`).',
      scopes: ['inbound:write'],
      params: IdParam,
      body: noBody,
      responses: { 202: { description: 'Generation started', schema: AgentEnvelope } },
      errors: notFound,
      handler: async ({ params }, { call }) => ({
        status: 202,
        body: { agent: agentJson((await clients.agents.generateScript({ id: params.id }, call)).agent) },
      }),
    }),
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
