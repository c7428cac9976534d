import type { ServiceClients } from '../../clients';
import { customApiRoutes } from './custom-api';
import { inboundAgentRoutes } from './inbound-agents';
import { agentLifecycleRoutes } from './lifecycle';

/** Healthcare inbound agents (`inbound:read`, `inbound:write`), owned by the agents service. */
export function agentRoutes(clients: ServiceClients) {
  // In this order: Express matches routes in the order they are mounted, and the OpenAPI document lists them so.
  return [...inboundAgentRoutes(clients), ...agentLifecycleRoutes(clients), ...customApiRoutes(clients)];
}
