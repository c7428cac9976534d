// Helpers of the leads area's route groups: the ingest rules that `POST /leads` and `POST /events`
// document, and the last conversations (from telephony) that the campaign and contact routes show.
import { nullIfNotFound } from '@voiceapi/kit/errors';
import { type CallContext } from '@voiceapi/kit/grpc';
import type { voiceapi } from '@voiceapi/proto';
import type { ServiceClients } from '../../clients';
import { conversationJson } from '../telephony/mappers';

export const LEAD_RULES =
  'Rules, in this order: the campaign is the tenant’s (422 `campaign_not_found`) and running (409 `campaign_not_running`); the phone is a real ' +
  'number in international format (400); `channel` or `channels` (400); on `call`: `consent.outboundCall: true` (422 `consent_required`), ' +
  '`consent.capturedAt` not in the future (400), the number on neither do-not-call list (422 `do_not_call`, `details` names the list); ' +
  'message templates exist and every placeholder has a value (400 naming it); a live `call` lead needs available credit for one call’s hold ' +
  '(402 `insufficient_credits`). A `call` lead outside the campaign’s calling window (in the called party’s local time, from the number) is ' +
  '`scheduled` and dialled when the window opens; every dial checks the do-not-call lists and the window again. Sandbox keys answer ' +
  '`sandbox_accepted`: the contact is recorded with its compliance decision, and nothing is dialled, sent or charged. With `Idempotency-Key` ' +
  'a retry answers the first result.';

/** The transcript and analysis of the contact's last call, from telephony (none when it has no call or no conversation). */
export async function lastConversation(
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
export async function lastConversations(
  clients: ServiceClients,
  contacts: readonly voiceapi.leads.v1.Contact[],
  call: CallContext,
) {
  const callIds = contacts.map((c) => c.lastCallId).filter((id): id is string => Boolean(id));
  if (callIds.length === 0) return new Map<string, ReturnType<typeof conversationJson>>();
  const { conversations } = await clients.telephony.listConversations({ callIds }, call);
  return new Map(conversations.map((c) => [c.callId, conversationJson(c)]));
}
