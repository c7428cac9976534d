import type { ServiceClients } from '../clients';
import type { Tag } from '../http/openapi';
import type { AnyRoute } from '../http/route';
import type { OperatorUseCases } from '../operator/operator';
import { apiKeyRoutes } from './admin/api-keys';
import { killSwitchRoutes } from './admin/kill-switch';
import { tenantRoutes } from './admin/tenants';
import { creditRoutes, creditTopUpRoutes } from './billing';
import { agentRoutes } from './agents';
import { companyRoutes } from './companies';
import { knowledgeRoutes } from './knowledge';
import { leadsRoutes } from './leads';
import { leadsOperatorRoutes } from './leads/operator';
import { recordingRoutes, telephonyRoutes } from './telephony';
import type { CallStreams } from './telephony/call-stream';
import { telephonyOperatorRoutes } from './telephony/operator';
import { webhookOperatorRoutes } from './webhooks';
import { pingRoutes } from './core/ping';

/**
 * Every route of both surfaces, by area. A new area is a folder `routes/<area>/` (its routes, zod
 * schemas and mappers from service messages to JSON) plus one line here; app.ts does not change.
 */
export interface RouteDeps {
  clients: ServiceClients;
  operator: OperatorUseCases;
  /** The open `GET /calls/stream` streams of this replica. */
  streams: CallStreams;
}

export interface Area {
  name: string;
  /** The OpenAPI tag(s) of the area's routes, with the descriptions the reference page shows. */
  tags: Tag[];
  routes(deps: RouteDeps): AnyRoute[];
}

/** `/api/v1`: key, scopes, rate limit, Idempotency-Key on POST. */
export const tenantAreas: Area[] = [
  {
    name: 'core',
    tags: [{ name: 'Core', description: 'Checking a key: who it belongs to, its mode and scopes' }],
    routes: () => pingRoutes,
  },
  {
    name: 'companies',
    tags: [
      { name: 'Companies', description: 'Company profiles the agents speak for (`companies:read`, `companies:write`)' },
    ],
    routes: ({ clients }) => companyRoutes(clients),
  },
  {
    name: 'credits',
    tags: [
      {
        name: 'Credits',
        description: 'The credit wallet and its ledger (`credits:read`); ledger amounts are authoritative',
      },
    ],
    routes: ({ clients }) => creditRoutes(clients),
  },
  {
    name: 'leads',
    tags: [
      {
        name: 'Campaigns',
        description: 'Outbound campaigns, read-only (`leads:read`): the dashboard creates and starts them',
      },
      {
        name: 'Leads',
        description:
          'Lead ingest with consent, do-not-call and calling-hours compliance, and the omni templates of WhatsApp and email (`leads:write`, `leads:read`)',
      },
      {
        name: 'Contacts',
        description: 'The people leads became: status, compliance evidence, cancel, follow-ups, erasure',
      },
      { name: 'Events', description: 'CRM events routed to campaigns (`POST /events`, `/event-routes`)' },
    ],
    routes: ({ clients }) => leadsRoutes(clients),
  },
  {
    name: 'telephony',
    tags: [
      {
        name: 'Calls',
        description:
          'The unified inbound and outbound call feed (`calls:read`), active calls, and recordings behind signed links (`recordings:read`)',
      },
      { name: 'Analytics', description: 'Call aggregates by day, agent and campaign (`analytics:read`)' },
      {
        name: 'Numbers',
        description: 'The tenant’s phone numbers and the pool it buys them from (`inbound:read`, `inbound:write`)',
      },
    ],
    routes: ({ clients, streams }) => telephonyRoutes(clients, streams),
  },
  {
    name: 'knowledge',
    tags: [
      {
        name: 'Knowledge',
        description:
          'Knowledge-base documents agents answer from: upload, text extraction, metadata (`knowledge:read`, `knowledge:write`); no endpoint returns a file’s bytes',
      },
    ],
    routes: ({ clients }) => knowledgeRoutes(clients),
  },
  {
    name: 'agents',
    tags: [
      {
        name: 'Inbound agents',
        description:
          'Healthcare inbound agents on owned numbers: lifecycle, script generation, and the tenant’s own API (`inbound:read`, `inbound:write`)',
      },
    ],
    routes: ({ clients }) => agentRoutes(clients),
  },
];

/** `/api/v1` routes without a key: their URL carries a signed token (the kill switch still applies). */
export const signedAreas: Area[] = [
  { name: 'recordings', tags: [], routes: ({ clients }) => recordingRoutes(clients) },
];

/** `/admin/v1`: operator token. */
export const adminAreas: Area[] = [
  {
    name: 'tenants',
    tags: [{ name: 'Tenants', description: "The platform's customers" }],
    routes: ({ operator }) => tenantRoutes(operator),
  },
  {
    name: 'api-keys',
    tags: [{ name: 'API keys', description: 'Key requests from the dashboard, their approval, and issued keys' }],
    routes: ({ operator }) => apiKeyRoutes(operator),
  },
  {
    name: 'kill-switch',
    tags: [{ name: 'Kill switch', description: 'Switching the whole tenant API off and on' }],
    routes: ({ operator }) => killSwitchRoutes(operator),
  },
  {
    name: 'credits',
    tags: [{ name: 'Credits', description: "Top-ups of a tenant's credit wallet" }],
    routes: ({ clients, operator }) => creditTopUpRoutes(clients, operator),
  },
  {
    name: 'outbound',
    tags: [
      { name: 'Campaigns', description: 'Creating and starting API campaigns' },
      { name: 'Omni templates', description: 'WhatsApp and email templates, and the record of rendered messages' },
      { name: 'Do not call', description: 'The platform’s and each tenant’s do-not-call lists' },
    ],
    routes: ({ clients, operator }) => leadsOperatorRoutes(clients, operator),
  },
  {
    name: 'telephony',
    tags: [
      {
        name: 'Numbers',
        description:
          'The number pool, numbers given to tenants, concurrency packages, and the carrier simulator’s inbound calls',
      },
    ],
    routes: ({ clients, operator }) => telephonyOperatorRoutes(clients, operator),
  },
  {
    name: 'webhooks',
    tags: [
      {
        name: 'Webhooks',
        description:
          'Tenant webhook endpoints (dashboard settings): registration, deliveries, recovery, secret rotation',
      },
    ],
    routes: ({ clients, operator }) => webhookOperatorRoutes(clients, operator),
  },
];

export const tagsOf = (areas: Area[]): Tag[] => areas.flatMap((a) => a.tags);

export const routesOf = (areas: Area[], deps: RouteDeps): AnyRoute[] => areas.flatMap((a) => a.routes(deps));
