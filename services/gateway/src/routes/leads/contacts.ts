// The contact routes: `GET`/`DELETE /contacts/{id}`, `POST /contacts/{id}/cancel`, `POST /contacts/{id}/followups`.
import type { ServiceClients } from '../../clients';
import { withBodyFields } from '../../http/errors';
import { IdParam } from '../../http/pagination';
import { defineRoute, noBody } from '../../http/route';
import { z } from '../../http/zod';
import { contactJson, followupJson } from './mappers';
import { ContactEnvelope, Followup, FollowupCreate } from './schemas';
import { lastConversation } from './shared';

const CONTACT_404 = { 404: 'No such contact for this tenant (`not_found`)' };

/** The people leads became: reading, erasing and cancelling one, and scheduling its follow-ups. */
export function contactRoutes(clients: ServiceClients) {
  const contactsTag = 'Contacts';
  return [
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
      errors: CONTACT_404,
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
      errors: CONTACT_404,
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
      errors: CONTACT_404,
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
      errors: { ...CONTACT_404, 409: 'The contact is cancelled (`conflict`)' },
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
