// The inbound agent routes: `GET`/`POST /inbound-agents`, `GET`/`PATCH /inbound-agents/{id}`.
import type { ServiceClients } from '../../clients';
import { withBodyFields } from '../../http/errors';
import { IdParam, PageQuery, Pagination, pagination } from '../../http/pagination';
import { defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import { agentFields, agentJson } from './mappers';
import { Agent, AgentCreate, AgentEnvelope, AgentPatch } from './schemas';
import { AGENT_404 } from './shared';

/** Listing, creating, reading and updating the tenant’s inbound agents. */
export function inboundAgentRoutes(clients: ServiceClients) {
  const tag = 'Inbound agents';
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
            pagination: pagination(query, res.page),
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
      errors: AGENT_404,
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
        ...AGENT_404,
        409: '`phone_scope_conflict`',
        422: '`phone_not_owned`, `company_not_found`, `knowledge_document_not_found` or `url_not_allowed`',
      },
      handler: async ({ params, body }, { call }) => {
        const { fields, clearFields } = agentFields(body);
        const res = await withBodyFields(clients.agents.updateAgent({ id: params.id, fields, clearFields }, call));
        return { status: 200, body: { agent: agentJson(res.agent) } };
      },
    }),
  ];
}
