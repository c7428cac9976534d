import type { ServiceClients } from '../../clients';
import { campaignRoutes } from './campaigns';
import { contactRoutes } from './contacts';
import { eventRoutes } from './events';
import { leadIngestRoutes } from './ingest';
import { omniTemplateRoutes } from './omni-templates';

/** Campaigns (read-only), lead ingest, contacts, events and omni templates, owned by the leads service. */
export function leadsRoutes(clients: ServiceClients) {
  // In this order: Express matches routes in the order they are mounted, and the OpenAPI document lists them so.
  return [
    ...campaignRoutes(clients),
    ...leadIngestRoutes(clients),
    ...eventRoutes(clients),
    ...omniTemplateRoutes(clients),
    ...contactRoutes(clients),
  ];
}
