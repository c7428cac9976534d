import type { ServiceClients } from '../../clients';
import type { OperatorUseCases } from '../../operator/operator';
import { campaignOperatorRoutes } from './operator-campaigns';
import { doNotCallOperatorRoutes } from './operator-do-not-call';
import { messageOperatorRoutes } from './operator-messages';
import { templateOperatorRoutes } from './operator-templates';

/** What the dashboard does for outbound: campaigns, omni templates, do-not-call lists, the message record. */
export function leadsOperatorRoutes(clients: ServiceClients, op: OperatorUseCases) {
  // In this order: Express matches routes in the order they are mounted, and the OpenAPI document lists them so.
  return [
    ...campaignOperatorRoutes(clients, op),
    ...templateOperatorRoutes(clients, op),
    ...doNotCallOperatorRoutes(clients, op),
    ...messageOperatorRoutes(clients, op),
  ];
}
