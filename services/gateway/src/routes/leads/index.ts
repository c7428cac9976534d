// Over 300 lines because it holds the routes of one area (leads, batches, campaigns, contacts, events), one handler each, as every route area has its own file.
import { createHash } from 'node:crypto';
import { nullIfNotFound, type CallContext } from '@voiceapi/kit';
import type { voiceapi } from '@voiceapi/proto';
import type { ServiceClients } from '../../clients';
import { conversationJson } from '../telephony/mappers';
import { withBodyFields } from '../../http/errors';
import { IdParam, PageQuery, Pagination, pagination } from '../../http/pagination';
import { defineRoute, noBody } from '../../http/route';
import { z } from '../../http/zod';
import {
  batchResultJson,
  campaignJson,
  contactJson,
  followupJson,
  leadAcceptedJson,
  leadInput,
  routeJson,
  templateJson,
} from './mappers';
import {
  BATCH_BODY_LIMIT_BYTES,
  BatchLead,
  BatchLeadResult,
  LeadBatch,
  LeadBatchFrame,
  LeadBatchResult,
  Campaign,
  ContactEnvelope,
  Contact,
  EventRoute,
  EventRouteCreate,
  EventRouteQuery,
  Followup,
  FollowupCreate,
  Lead,
  LeadAccepted,
  LeadEvent,
  Template,
  TemplatesQuery,
} from './schemas';

type Json<S extends z.ZodType> = z.infer<S>;
const LEAD_RULES =
  'Rules, in this order: the campaign is the tenant’s (422 `campaign_not_found`) and running (409 `campaign_not_running`); the phone is a real ' +
  'number in international format (400); `channel` or `channels` (400); on `call`: `consent.outboundCall: true` (422 `consent_required`), ' +
  '`consent.capturedAt` not in the future (400), the number on neither do-not-call list (422 `do_not_call`, `details` names the list); ' +
  'message templates exist and every placeholder has a value (400 naming it); a live `call` lead needs available credit for one call’s hold ' +
  '(402 `insufficient_credits`). A `call` lead outside the campaign’s calling window (in the called party’s local time, from the number) is ' +
  '`scheduled` and dialled when the window opens; every dial checks the do-not-call lists and the window again. Sandbox keys answer ' +
  '`sandbox_accepted`: the contact is recorded with its compliance decision, and nothing is dialled, sent or charged. With `Idempotency-Key` ' +
  'a retry answers the first result.';

const CAMPAIGN_OR_CONTACT_404 = { 404: 'No such contact for this tenant (`not_found`)' };

/** The transcript and analysis of the contact's last call, from telephony (none when it has no call or no conversation). */
async function lastConversation(
  clients: ServiceClients,
  contact: voiceapi.leads.v1.Contact | undefined,
  call: CallContext,
) {
  if (!contact?.lastCallId) return undefined;
  const found = await nullIfNotFound(
    clients.telephony.getCall({ callId: contact.lastCallId, contactId: contact.id }, call),
  );
  return found ? conversationJson(found) : undefined;
}

/** The last conversations of a page of contacts, in one call to telephony. */
async function lastConversations(
  clients: ServiceClients,
  contacts: readonly voiceapi.leads.v1.Contact[],
  call: CallContext,
) {
  const callIds = contacts.map((c) => c.lastCallId).filter((id): id is string => Boolean(id));
  if (callIds.length === 0) return new Map<string, ReturnType<typeof conversationJson>>();
  const { conversations } = await clients.telephony.listConversations({ callIds }, call);
  return new Map(conversations.map((c) => [c.callId, conversationJson(c)]));
}

/** Campaigns (read-only), lead ingest, contacts, events and omni templates, owned by the leads service. */
export function leadsRoutes(clients: ServiceClients) {
  const tag = 'Leads';
  const contactsTag = 'Contacts';
  const eventsTag = 'Events';
  const campaignsTag = 'Campaigns';
  return [
    defineRoute({
      method: 'get',
      path: '/campaigns',
      tag: campaignsTag,
      summary: 'List campaigns',
      description:
        'Campaigns are created and started in the dashboard; the API reads them. Stats count the campaign’s contacts by status.',
      scopes: ['leads:read'],
      query: PageQuery,
      responses: {
        200: {
          description: 'A page of campaigns, newest first',
          schema: z.object({ campaigns: z.array(Campaign), pagination: Pagination }),
        },
      },
      handler: async ({ query }, { call }) => {
        const res = await clients.leads.listCampaigns({ page: { page: query.page, limit: query.limit } }, call);
        return {
          status: 200,
          body: {
            campaigns: res.campaigns.map(campaignJson),
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
      method: 'get',
      path: '/campaigns/{id}',
      tag: campaignsTag,
      summary: 'Get a campaign',
      scopes: ['leads:read'],
      params: IdParam,
      responses: { 200: { description: 'The campaign', schema: z.object({ campaign: Campaign }) } },
      errors: { 404: 'No such campaign for this tenant (`not_found`)' },
      handler: async ({ params }, { call }) => ({
        status: 200,
        body: { campaign: campaignJson((await clients.leads.getCampaign({ id: params.id }, call)).campaign) },
      }),
    }),
    defineRoute({
      method: 'get',
      path: '/campaigns/{id}/contacts',
      tag: campaignsTag,
      summary: 'List a campaign’s contacts',
      description:
        'Each with the transcript and analysis of its last answered call, as `GET /contacts/{id}` shows them.',
      scopes: ['leads:read'],
      params: IdParam,
      query: PageQuery,
      responses: {
        200: {
          description: 'A page of contacts, newest first',
          schema: z.object({ contacts: z.array(Contact), pagination: Pagination }),
        },
      },
      errors: { 404: 'No such campaign for this tenant (`not_found`)' },
      handler: async ({ params, query }, { call }) => {
        const res = await clients.leads.listCampaignContacts(
          { campaignId: params.id, page: { page: query.page, limit: query.limit } },
          call,
        );
        const last = await lastConversations(clients, res.contacts, call);
        return {
          status: 200,
          body: {
            contacts: res.contacts.map((c) => contactJson(c, c.lastCallId ? last.get(c.lastCallId) : undefined)),
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
      path: '/leads',
      tag,
      summary: 'Push a lead to a running API campaign',
      description: LEAD_RULES,
      operationId: 'createLead',
      scopes: ['leads:write'],
      body: Lead,
      responses: {
        202: { description: 'Accepted: the contact is recorded; its dial or messages follow', schema: LeadAccepted },
      },
      errors: {
        402: 'A live `call` lead and the wallet cannot cover one call’s hold (`insufficient_credits`)',
        409: 'The campaign is not running (`campaign_not_running`)',
        422: '`campaign_not_found`, `consent_required` or `do_not_call` (details name the list)',
      },
      handler: async ({ body }, { call }) => {
        const { campaignId, ...lead } = body;
        const res = await withBodyFields(clients.leads.ingestLead({ campaignId, lead: leadInput(lead) }, call));
        return { status: 202, body: leadAcceptedJson(res) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/leads/batch',
      tag,
      summary: 'Push up to 1,000 leads in one request',
      description:
        'Each lead is decided on its own, by the rules of `POST /leads`, and answered in its own result, in the order sent: one lead’s refusal never ' +
        'refuses the others, and a lead that does not fit `BatchLead` is refused in its result (`validation_error`, `details` naming `body.leads.<index>.<field>`). ' +
        'A lead without `campaignId` takes the batch’s. `externalId` makes sending a lead again harmless: a lead whose `externalId` was accepted before ' +
        '(per tenant and key mode) is not ingested again, and its result repeats the first one’s with `duplicate: true`; a second lead with the same ' +
        '`externalId` in one batch is refused. The whole request is refused only when it is not a batch: `leads` missing, empty or over 1,000 (400), ' +
        `or a body over 2 MB (413). It counts as one request against the rate limit. With \`Idempotency-Key\` a retry answers the first result, and a retry ` +
        'after a failure part-way stores no lead twice.',
      operationId: 'createLeadBatch',
      scopes: ['leads:write'],
      body: LeadBatchFrame,
      documentedBody: LeadBatch,
      bodyLimitBytes: BATCH_BODY_LIMIT_BYTES,
      responses: { 200: { description: 'A result per lead, in the order sent', schema: LeadBatchResult } },
      handler: async ({ body }, { call, requestId, idempotencyKey }) => {
        const results = new Array<Json<typeof BatchLeadResult>>(body.leads.length);
        const externalIds: (string | undefined)[] = [];
        const leads: { index: number; campaignId: string; externalId?: string; lead: ReturnType<typeof leadInput> }[] =
          [];
        body.leads.forEach((raw, index) => {
          const parsed = BatchLead.safeParse(raw);
          const externalId = parsed.success ? parsed.data.externalId : undefined;
          externalIds[index] = externalId;
          if (!parsed.success) {
            const details = parsed.error.issues.map((i) => ({
              path: ['body', 'leads', index, ...i.path].join('.'),
              message: i.message,
            }));
            results[index] = {
              index,
              status: 'refused',
              reasonCode: 'validation_error',
              error: `invalid lead: ${details[0]!.path} ${details[0]!.message}`,
              details,
            };
            return;
          }
          const { campaignId = body.campaignId, externalId: _x, ...lead } = parsed.data;
          if (campaignId === undefined) {
            const path = `body.leads.${index}.campaignId`;
            results[index] = {
              index,
              status: 'refused',
              reasonCode: 'validation_error',
              error: `invalid lead: ${path} is required when the batch names no campaignId`,
              details: [{ path, message: 'required when the batch names no campaignId' }],
            };
            return;
          }
          leads.push({ index, campaignId, ...(externalId !== undefined && { externalId }), lead: leadInput(lead) });
        });
        if (leads.length > 0) {
          // The same on every try of this request: with an Idempotency-Key, also on the client's retries.
          const batchKey =
            idempotencyKey !== undefined ? createHash('sha256').update(idempotencyKey).digest('hex') : requestId;
          const res = await clients.leads.ingestLeadBatch({ batchKey, leads }, call);
          for (const r of res.results) results[r.index] = batchResultJson(r, externalIds[r.index]);
        }
        const refused = results.filter((r) => r.status === 'refused').length;
        return { status: 200, body: { accepted: results.length - refused, refused, results } };
      },
    }),
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
    defineRoute({
      method: 'get',
      path: '/omni/templates',
      tag,
      summary: 'List WhatsApp and email templates',
      description:
        'Name one with `whatsappTemplateId` / `emailTemplateId` in a lead, with values for its `variables` in `whatsappParams` / `templateVariables`.',
      operationId: 'listOmniTemplates',
      scopes: ['leads:read'],
      query: TemplatesQuery,
      responses: {
        200: {
          description: 'The tenant’s templates, newest first',
          schema: z.object({ templates: z.array(Template) }),
        },
      },
      handler: async ({ query }, { call }) => ({
        status: 200,
        body: {
          templates: (await clients.leads.listTemplates({ channel: query.channel ?? '' }, call)).templates.map(
            templateJson,
          ),
        },
      }),
    }),
    defineRoute({
      method: 'get',
      path: '/contacts/{id}',
      tag: contactsTag,
      summary: 'Get a contact',
      description:
        'With its status, attempts, the compliance decision of its call channel, and the transcript and analysis of its last answered call.',
      scopes: ['leads:read'],
      params: IdParam,
      responses: { 200: { description: 'The contact', schema: ContactEnvelope } },
      errors: CAMPAIGN_OR_CONTACT_404,
      handler: async ({ params }, { call }) => {
        const { contact } = await clients.leads.getContact({ id: params.id }, call);
        return { status: 200, body: { contact: contactJson(contact, await lastConversation(clients, contact, call)) } };
      },
    }),
    defineRoute({
      method: 'delete',
      path: '/contacts/{id}',
      tag: contactsTag,
      summary: 'Delete a contact and erase its personal data',
      description:
        'Erases the contact (phone, name, email, template values), its messages, follow-ups and pending dials, and, moments later, its calls’ numbers, ' +
        'transcripts, analyses and recordings (the calls stay in the feed with their outcome, duration and charge). Do-not-call entries stay.',
      scopes: ['leads:write'],
      params: IdParam,
      responses: { 204: { description: 'Erased' } },
      errors: CAMPAIGN_OR_CONTACT_404,
      handler: async ({ params }, { call }) => {
        await clients.leads.deleteContact({ id: params.id }, call);
        return { status: 204 };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/contacts/{id}/cancel',
      tag: contactsTag,
      summary: 'Cancel a contact',
      description:
        'Its pending dials and follow-ups are dropped; a dial already requested is refused when telephony claims it. Takes no body (or `{}`).',
      scopes: ['leads:write'],
      params: IdParam,
      body: noBody,
      responses: { 200: { description: 'The contact, `cancelled`', schema: ContactEnvelope } },
      errors: CAMPAIGN_OR_CONTACT_404,
      handler: async ({ params }, { call }) => ({
        status: 200,
        body: { contact: contactJson((await clients.leads.cancelContact({ id: params.id }, call)).contact) },
      }),
    }),
    defineRoute({
      method: 'post',
      path: '/contacts/{id}/followups',
      tag: contactsTag,
      summary: 'Schedule a follow-up',
      description:
        'A `call` follow-up is checked at its time like any dial (consent, both do-not-call lists, the calling window: outside it, it waits for the opening).',
      operationId: 'createContactFollowup',
      scopes: ['leads:write'],
      params: IdParam,
      body: FollowupCreate,
      responses: { 201: { description: 'Scheduled', schema: z.object({ followup: Followup }) } },
      errors: { ...CAMPAIGN_OR_CONTACT_404, 409: 'The contact is cancelled (`conflict`)' },
      handler: async ({ params, body }, { call }) => {
        const res = await withBodyFields(
          clients.leads.createFollowup(
            {
              contactId: params.id,
              scheduledTime: new Date(body.scheduledAt),
              ...(body.channel && { channel: body.channel }),
              ...(body.note !== undefined && { note: body.note }),
            },
            call,
          ),
        );
        return { status: 201, body: { followup: followupJson(res.followup) } };
      },
    }),
  ];
}

function need<T>(v: T | undefined): T {
  if (v === undefined) throw new Error('leads service answered without a route');
  return v;
}
