import type { ServiceClients } from '../clients';
import type { AnyRoute } from '../http/route';
import type { OperatorUseCases } from '../operator/operator';
import { apiKeyRoutes } from './admin/api-keys';
import { killSwitchRoutes } from './admin/kill-switch';
import { tenantRoutes } from './admin/tenants';
import { companyRoutes } from './companies';
import { pingRoutes } from './core/ping';

/**
 * Every route of both surfaces, by area. A new area is a folder `routes/<area>/` (its routes, zod
 * schemas and mappers from service messages to JSON) plus one line here; app.ts does not change.
 */
export interface RouteDeps {
  clients: ServiceClients;
  operator: OperatorUseCases;
}

export interface Area {
  name: string;
  routes(deps: RouteDeps): AnyRoute[];
}

/** `/api/v1`: key, scopes, rate limit, Idempotency-Key on POST. */
export const tenantAreas: Area[] = [
  { name: 'core', routes: () => pingRoutes },
  { name: 'companies', routes: ({ clients }) => companyRoutes(clients) },
];

/** `/admin/v1`: operator token. */
export const adminAreas: Area[] = [
  { name: 'tenants', routes: ({ operator }) => tenantRoutes(operator) },
  { name: 'api-keys', routes: ({ operator }) => apiKeyRoutes(operator) },
  { name: 'kill-switch', routes: ({ operator }) => killSwitchRoutes(operator) },
];

export const routesOf = (areas: Area[], deps: RouteDeps): AnyRoute[] => areas.flatMap((a) => a.routes(deps));
