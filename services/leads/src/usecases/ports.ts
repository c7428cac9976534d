import type { AnnounceOptions, TenantScope } from '@voiceapi/kit';
import type { Campaign, Contact, ContactRef, ContactStatus } from '../domain/contact';
import type { Message } from '../domain/message';

/** What a leads write announces, in the domain's words (`events/publish.ts` makes each the record of its readers' stream). */
export type LeadEvent =
  | { kind: 'dialRequested'; tenantId: string; contact: Contact; campaign: Campaign; dispatch: number; at: Date }
  | { kind: 'messageRequested'; tenantId: string; contactId: string; messageId: string; channel: string; at: Date }
  | {
      kind: 'statusChanged';
      tenantId: string;
      before: ContactRef;
      status: ContactStatus;
      at: Date;
      endReason?: string;
      /** Sent after its write, not stored before it: its cause, repeated, announces it again (decision 0150). */
      atOnce?: boolean;
    }
  | { kind: 'contactCancelled'; tenantId: string; contactId: string; at: Date }
  | { kind: 'contactDeleted'; tenantId: string; contactId: string; at: Date };

/**
 * An event made where its cause happened (so it carries that request's trace, however late a
 * batch announces it), to be announced with its write.
 */
export interface MadeEvent {
  readonly event: LeadEvent;
}

/**
 * How leads announce a write: the write and its events as one, so no event goes out without its
 * change and no change stays without its event (the kit's `Announcer`, in the domain's words).
 * `events/publish.ts` implements it over the outbox; `main.ts` hands it over.
 */
export interface LeadEvents {
  make(event: LeadEvent): MadeEvent;
  announce<R>(events: readonly MadeEvent[], write: () => Promise<R>, opts: AnnounceOptions<R, MadeEvent>): Promise<R>;
}

/**
 * Whether a tenant's contact status changes have a reader: an endpoint of the tenant's that
 * receives `contact.status_changed`. True whenever that cannot be known (the webhooks service is
 * away): announcing a change nobody reads costs an event; dropping one a tenant reads loses it.
 */
export interface StatusChangeReaders {
  wanted(scope: TenantScope): Promise<boolean>;
}

/** Whether a live wallet can cover one call's hold now (billing decides the amount). */
export interface CreditCheck {
  coversOneCall(scope: TenantScope, maxCallSeconds: number): Promise<boolean>;
}

/** What sends a rendered message: a WhatsApp or email provider, or the recorder. */
export interface MessageAdapter {
  /** Sends the message; `message.id` is stable across retries (pass it to the provider as its idempotency key). */
  send(message: Message & { tenantId: string }): Promise<{ providerId: string }>;
}

/** What leads knows of a live wallet: as of its entry `seq`, the longest outbound call its available credit pays the hold of. */
export interface CreditState {
  seq: number;
  longestOutboundCallSeconds: number;
}

/** Billing's answer for one call's hold now: whether the wallet covers it, and the wallet's credit it was judged on. */
export type HoldQuote = (
  scope: TenantScope,
  maxCallSeconds: number,
) => Promise<{ covered: boolean; state: CreditState }>;
