// The inbound agent lifecycle routes: `POST /inbound-agents/{id}/activate` and `POST /inbound-agents/{id}/generate-script`.
import type { ServiceClients } from '../../clients';
import { IdParam } from '../../http/pagination';
import { defineRoute, noBody } from '../../http/route';
import { agentJson } from './mappers';
import { ActivateBody, ActivateResult, AgentEnvelope } from './schemas';
import { AGENT_404 } from './shared';

/** Activating or deactivating an inbound agent, and generating its script. */
export function agentLifecycleRoutes(clients: ServiceClients) {
  const tag = 'Inbound agents';
  return [
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
        ...AGENT_404,
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
      errors: AGENT_404,
      handler: async ({ params }, { call }) => ({
        status: 202,
        body: { agent: agentJson((await clients.agents.generateScript({ id: params.id }, call)).agent) },
      }),
    }),
  ];
}
