import type { ServiceClients } from '../../clients';
import { documentByIdRoutes } from './document-by-id';
import { documentListRoutes } from './document-list';
import { uploadRoutes } from './uploads';

/** Knowledge-base documents (`knowledge:read`, `knowledge:write`), owned by the knowledge service. */
export function knowledgeRoutes(clients: ServiceClients) {
  // In this order: Express matches routes in the order they are mounted (`upload-billing-info` before
  // `{fileId}`), and the OpenAPI document lists them so.
  return [...documentListRoutes(clients), ...uploadRoutes(clients), ...documentByIdRoutes(clients)];
}
