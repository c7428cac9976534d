import { eventRecord, type EventRecord } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import type { Campaign, Contact, ContactRef, ContactStatus } from '../domain/contact';

const { LeadsEvent } = voiceapi.events.v1;

/**
 * The events of the leads stream, keyed by contact id. Ids are derived from what they announce,
 * so writing one again (a retried dispatch) stores or publishes the same event, which consumers
 * skip: a dial request's id is its dial id.
 */

export const dialId = (contactId: string, dispatch: number): string => `${contactId}:${dispatch}`;

export function dialRequested(tenantId: string, contact: Contact, campaign: Campaign, dispatch: number, now: Date): EventRecord {
  const id = dialId(contact.id, dispatch);
  return eventRecord(
    LeadsEvent,
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
  return eventRecord(LeadsEvent, contactId, { occurTime: now, event: { $case: 'messageRequested', messageRequested: { messageId, tenantId, contactId, channel } } }, `message:${messageId}`);
}

export function statusChanged(tenantId: string, before: ContactRef, status: ContactStatus, now: Date, endReason?: string): EventRecord {
  return eventRecord(LeadsEvent, before.id, {
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

/** One per contact: a repeated delete (after a failure part-way) finds its event stored already. */
export function contactDeleted(tenantId: string, contactId: string, now: Date): EventRecord {
  return eventRecord(LeadsEvent, contactId, { occurTime: now, event: { $case: 'contactDeleted', contactDeleted: { tenantId, contactId } } }, `contact-deleted:${contactId}`);
}
