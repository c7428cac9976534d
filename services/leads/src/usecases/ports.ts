import type { AnnounceOptions } from '@voiceapi/kit/events';
import type { TenantScope } from '@voiceapi/kit/grpc';
import type { Campaign, Contact, ContactRef, ContactStatus } from '../domain/contact';
import type { Message } from '../domain/message';

/** What a leads write announces; `events/publish.ts` maps each to its readers' stream. */
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
      /** Sent after its write, not stored before it: a repeated cause re-announces it (decision 0150). */
      atOnce?: boolean;
    }
  | { kind: 'contactCancelled'; tenantId: string; contactId: string; at: Date }
  | { kind: 'contactDeleted'; tenantId: string; contactId: string; at: Date };

/** Made where its cause happened, so it carries that request's trace however late a batch announces it. */
export interface MadeEvent {
  readonly event: LeadEvent;
}

/** A write and its events as one (the kit's `Announcer`); `events/publish.ts` implements it over the outbox. */
export interface LeadEvents {
  make(event: LeadEvent): MadeEvent;
  announce<R>(events: readonly MadeEvent[], write: () => Promise<R>, opts: AnnounceOptions<R, MadeEvent>): Promise<R>;
}

/**
 * Whether a tenant has an endpoint for `contact.status_changed`. True when unknown (webhooks away):
 * an unread event costs little, a dropped one is lost.
 */
export interface StatusChangeReaders {
  wanted(scope: TenantScope): Promise<boolean>;
}

/** Whether a live wallet can cover one call's hold now (billing decides the amount). */
export interface CreditCheck {
  coversOneCall(scope: TenantScope, maxCallSeconds: number): Promise<boolean>;
}

/** A WhatsApp or email provider, or the recorder. */
export interface MessageAdapter {
  /** `message.id` is stable across retries: pass it to the provider as its idempotency key. */
  send(message: Message & { tenantId: string }): Promise<{ providerId: string }>;
}

/** A live wallet as of entry `seq`: the longest outbound call whose hold its available credit pays. */
export interface CreditState {
  seq: number;
  longestOutboundCallSeconds: number;
}

/** Billing's answer for one call's hold, with the credit state it was judged on. */
export type HoldQuote = (
  scope: TenantScope,
  maxCallSeconds: number,
) => Promise<{ covered: boolean; state: CreditState }>;
