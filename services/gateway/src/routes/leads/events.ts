// The event routes: `POST /events` (a lead through an event route) and `GET`/`POST`/`DELETE /event-routes`.
import type { ServiceClients } from '../../clients';
import { withBodyFields } from '../../http/errors';
import { defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import { leadAcceptedJson, leadInput, routeJson } from './mappers';
import { EventRoute, EventRouteCreate, EventRouteQuery, LeadAccepted, LeadEvent } from './schemas';
import { LEAD_RULES } from './shared';

/** CRM events routed to campaigns: pushing one, and the routes from event types to campaigns. */
export function eventRoutes(clients: ServiceClients) {
  const eventsTag = 'Events';
  return [
    defineRoute({
      method: 'post',
      path: '/events',
      tag: eventsTag,
      summary: 'Push a lead through an event route',
      description: `The lead goes to the campaign its \`eventType\` is routed to (\`POST /event-routes\`); an unmapped type is 422 \`event_route_not_found\`. Then as \`POST /leads\`: ${LEAD_RULES}`,
      operationId: 'createEvent',
      scopes: ['leads:write'],
      body: LeadEvent,
      responses: { 202: { description: 'Accepted', schema: LeadAccepted } },
      errors: {
        402: 'A live `call` lead and the wallet cannot cover one call’s hold (`insufficient_credits`)',
        409: 'The routed campaign is not running (`campaign_not_running`)',
        422: '`event_route_not_found`, `campaign_not_found`, `consent_required` or `do_not_call`',
      },
      handler: async ({ body }, { call }) => {
        const { eventType, ...lead } = body;
        const res = await withBodyFields(clients.leads.ingestEvent({ eventType, lead: leadInput(lead) }, call));
        return { status: 202, body: leadAcceptedJson(res) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/event-routes',
      tag: eventsTag,
      summary: 'List event routes',
      scopes: ['leads:read'],
      responses: {
        200: {
          description: 'Every route of the tenant, oldest first',
          schema: z.object({ routes: z.array(EventRoute) }),
        },
      },
      handler: async (_input, { call }) => ({
        status: 200,
        body: { routes: (await clients.leads.listEventRoutes({}, call)).routes.map(routeJson) },
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/event-routes',
      tag: eventsTag,
      summary: 'Route an event type to a campaign',
      description:
        'Creates the route, or replaces the campaign of an existing route for that `eventType`. At most 1,000 routes per tenant.',
      scopes: ['leads:write'],
      body: EventRouteCreate,
      responses: { 201: { description: 'The route', schema: z.object({ route: EventRoute }) } },
      errors: { 422: 'The campaign is unknown or another tenant’s (`campaign_not_found`)' },
      handler: async ({ body }, { call }) => ({
        status: 201,
        body: { route: routeJson(need((await withBodyFields(clients.leads.putEventRoute(body, call))).route)) },
      }),
    }),
    defineRoute({
      method: 'delete',
      path: '/event-routes',
      tag: eventsTag,
      summary: 'Remove the route of an event type',
      operationId: 'deleteEventRoute',
      scopes: ['leads:write'],
      query: EventRouteQuery,
      responses: { 204: { description: 'Removed' } },
      errors: { 404: 'No route for this event type (`not_found`)' },
      handler: async ({ query }, { call }) => {
        await clients.leads.deleteEventRoute({ eventType: query.eventType }, call);
        return { status: 204 };
      },
    }),
  ];
}

function need<T>(v: T | undefined): T {
  if (v === undefined) throw new Error('leads service answered without a route');
  return v;
}
