import { eventRecord, type Announcer, type EventRecord } from '@voiceapi/kit/events';
import { voiceapi } from '@voiceapi/proto';
import { dialId, type Campaign, type Contact, type ContactRef, type ContactStatus } from '../domain/contact';
import type { LeadEvent, LeadEvents, MadeEvent } from '../usecases/ports';

const { LeadsDialEvent, LeadsContactEvent, LeadsMessageEvent } = voiceapi.events.v1;

/**
 * Leads events, keyed by contact id, each on its readers' stream. Ids derive from what they announce, so a
 * retried write yields the same event, which consumers skip.
 */
export function leadEvents(outbox: Announcer): LeadEvents {
  // Made with the event, in its cause's context, so the record carries its trace.
  const records = new WeakMap<MadeEvent, EventRecord>();
  const recordOfMade = (m: MadeEvent) => {
    const r = records.get(m);
    if (!r) throw new Error('a leads event announced that was not made by leadEvents().make');
    return r;
  };
  return {
    make(event) {
      const made: MadeEvent = { event };
      records.set(made, recordOf(event));
      return made;
    },
    announce(events, write, opts) {
      const recs = events.map(recordOfMade);
      const { readBack } = opts;
      const madeOf = new Map(recs.map((r, i) => [r, events[i]!]));
      return outbox.announce(recs, write, {
        ...opts,
        readBack: typeof readBack === 'function' ? (r) => readBack(madeOf.get(r)!) : readBack,
        // Sent after the write: lost dial requests are re-requested (decision 0149: `reannounceQueued`),
        // lost call moves re-announced by their repeated causes (decision 0150: `announceAgain`).
        atOnce: (r) => {
          const { event } = madeOf.get(r)!;
          return event.kind === 'dialRequested' || (event.kind === 'statusChanged' && event.atOnce === true);
        },
      });
    },
  };
}

function recordOf(e: LeadEvent): EventRecord {
  switch (e.kind) {
    case 'dialRequested':
      return dialRequested(e.tenantId, e.contact, e.campaign, e.dispatch, e.at);
    case 'messageRequested':
      return messageRequested(e.tenantId, e.contactId, e.messageId, e.channel, e.at);
    case 'statusChanged':
      return statusChanged(e.tenantId, e.before, e.status, e.at, e.endReason);
    case 'contactCancelled':
      return contactCancelled(e.tenantId, e.contactId, e.at);
    case 'contactDeleted':
      return contactDeleted(e.tenantId, e.contactId, e.at);
  }
}

function dialRequested(
  tenantId: string,
  contact: Contact,
  campaign: Campaign,
  dispatch: number,
  now: Date,
): EventRecord {
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

function messageRequested(
  tenantId: string,
  contactId: string,
  messageId: string,
  channel: string,
  now: Date,
): EventRecord {
  return eventRecord(
    LeadsMessageEvent,
    contactId,
    {
      occurTime: now,
      event: { $case: 'messageRequested', messageRequested: { messageId, tenantId, contactId, channel } },
    },
    `message:${messageId}`,
  );
}

function statusChanged(
  tenantId: string,
  before: ContactRef,
  status: ContactStatus,
  now: Date,
  endReason?: string,
): EventRecord {
  return eventRecord(
    LeadsContactEvent,
    before.id,
    {
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
    },
    `status:${before.id}:${status}:${now.getTime()}`,
  );
}

/** A contact cancelled: telephony drops its waiting dials. */
function contactCancelled(tenantId: string, contactId: string, now: Date): EventRecord {
  return eventRecord(LeadsDialEvent, contactId, {
    occurTime: now,
    event: { $case: 'contactCancelled', contactCancelled: { tenantId, contactId } },
  });
}

/** One per contact: a repeated delete (after a failure part-way) finds its event stored already. */
function contactDeleted(tenantId: string, contactId: string, now: Date): EventRecord {
  return eventRecord(
    LeadsDialEvent,
    contactId,
    { occurTime: now, event: { $case: 'contactDeleted', contactDeleted: { tenantId, contactId } } },
    `contact-deleted:${contactId}`,
  );
}
