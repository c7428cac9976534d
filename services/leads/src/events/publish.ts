import { eventRecord, type EventRecord } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import type { Campaign, Contact, ContactRef, ContactStatus } from '../domain/contact';

const { LeadsDialEvent, LeadsContactEvent, LeadsMessageEvent } = voiceapi.events.v1;

/**
 * The leads service's events, keyed by contact id, each on the stream of its readers: dial
 * requests and the contacts whose dials are dropped for telephony (`leads.dial.v1`), status
 * changes for webhooks (`leads.contact.v1`), message requests for the sender (`leads.message.v1`).
 * Ids are derived from what they announce, so writing one again (a retried dispatch) stores or
 * publishes the same event, which consumers skip: a dial request's id is its dial id.
 */

export const dialId = (contactId: string, dispatch: number): string => `${contactId}:${dispatch}`;

export function dialRequested(tenantId: string, contact: Contact, campaign: Campaign, dispatch: number, now: Date): EventRecord {
  const id = dialId(contact.id, dispatch);
  return eventRecord(
    LeadsDialEvent,
    contact.id,
    {
      occurTime: now,
      event: {
        $case: 'dialRequested',
        dialRequested: {
          dialId: id,
          tenantId,
          contactId: contact.id,
          campaignId: campaign.id,
          phone: contact.phone,
          maxCallSeconds: campaign.maxCallSeconds,
          attempt: contact.attempts + 1,
          ...(campaign.agentName !== undefined && { agentName: campaign.agentName }),
          ...(campaign.fromNumber !== undefined && { fromNumber: campaign.fromNumber }),
        },
      },
    },
    `dial:${id}`,
  );
}

export function messageRequested(tenantId: string, contactId: string, messageId: string, channel: string, now: Date): EventRecord {
  return eventRecord(LeadsMessageEvent, contactId, { occurTime: now, event: { $case: 'messageRequested', messageRequested: { messageId, tenantId, contactId, channel } } }, `message:${messageId}`);
}

/** A contact's status change, for the tenant's webhooks. */
export function statusChanged(tenantId: string, before: ContactRef, status: ContactStatus, now: Date, endReason?: string): EventRecord {
  return eventRecord(LeadsContactEvent, before.id, {
    occurTime: now,
    event: {
      $case: 'contactStatusChanged',
      contactStatusChanged: {
        tenantId,
        contactId: before.id,
        campaignId: before.campaignId,
        status,
        previousStatus: before.status,
        sandbox: before.sandbox,
        ...(endReason !== undefined && { endReason }),
      },
    },
  });
}

/** A contact cancelled: telephony drops its waiting dials. */
export function contactCancelled(tenantId: string, contactId: string, now: Date): EventRecord {
  return eventRecord(LeadsDialEvent, contactId, { occurTime: now, event: { $case: 'contactCancelled', contactCancelled: { tenantId, contactId } } });
}

/** One per contact: a repeated delete (after a failure part-way) finds its event stored already. */
export function contactDeleted(tenantId: string, contactId: string, now: Date): EventRecord {
  return eventRecord(LeadsDialEvent, contactId, { occurTime: now, event: { $case: 'contactDeleted', contactDeleted: { tenantId, contactId } } }, `contact-deleted:${contactId}`);
}
