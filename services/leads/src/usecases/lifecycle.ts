import type { EventRecord, TenantScope } from '@voiceapi/kit';
import type { Contact, ContactRef, ContactStatus } from '../domain/contact';
import { contactCancelled, statusChanged } from '../events/publish';
import type { ContactChange, ContactStore } from '../store/contact-store';
import type { LeadEvents, StatusChangeReaders } from './ports';

export interface Move {
  /** Fields set with the status. */
  set?: Record<string, unknown>;
  unset?: string[];
  /** Only from these statuses (the move is skipped otherwise). */
  from?: readonly ContactStatus[];
  /** Only while the contact also matches these fields (with `from`). */
  where?: Record<string, unknown>;
  endReason?: string;
  /** More events announced by the same change (a dial request). */
  events?: EventRecord[];
}

/**
 * Every status change of a contact after ingest goes through here, announced with the write
 * (`LeadEvents.announce`): no consumer hears of a change that did not happen, and no change goes
 * unannounced after a crash. What is announced is what a reader acts on: the change itself when
 * the tenant has an endpoint for `contact.status_changed` (`StatusChangeReaders`), a cancellation
 * always (telephony drops the contact's waiting dials); a change nobody reads is the write alone.
 */
export class ContactLifecycle {
  constructor(
    private readonly contacts: ContactStore,
    private readonly events: LeadEvents,
    private readonly readers: StatusChangeReaders,
    private readonly now: () => Date,
  ) {}

  async move(scope: TenantScope, contact: ContactRef, status: ContactStatus, m: Move = {}): Promise<Contact | null> {
    const now = this.now();
    const changes = status !== contact.status;
    const events = [
      ...(changes && (await this.readers.wanted(scope)) ? [statusChanged(scope.tenantId, contact, status, now, m.endReason)] : []),
      ...(changes && status === 'cancelled' ? [contactCancelled(scope.tenantId, contact.id, now)] : []),
      ...(m.events ?? []),
    ];
    const change: ContactChange = {
      $set: { ...m.set, status, updatedAt: now, ...(m.endReason !== undefined && { endReason: m.endReason }) },
      ...(m.unset?.length && { $unset: Object.fromEntries(m.unset.map((f) => [f, 1])) }),
    };
    return this.events.announce(events, () => this.contacts.update(scope, contact.id, change, m.from, m.where), {
      applied: (updated) => updated !== null,
      readBack: this.contacts.moved(scope, contact.id, status, now),
    });
  }
}
