import type { EventRecord, Outbox, TenantScope } from '@voiceapi/kit';
import type { Contact, ContactRef, ContactStatus } from '../domain/contact';
import { statusChanged } from '../events/publish';
import type { ContactChange, ContactStore } from '../store/contact-store';

export interface Move {
  /** Fields set with the status. */
  set?: Record<string, unknown>;
  unset?: string[];
  /** Only from these statuses (the move is skipped otherwise). */
  from?: readonly ContactStatus[];
  endReason?: string;
  /** More events announced by the same change (a dial request). */
  events?: EventRecord[];
}

/**
 * Every status change of a contact after ingest goes through here, announced on the leads
 * stream (for tenant webhooks and telephony): the events are stored held, the contact written,
 * then the events released, so no consumer hears of a change that did not happen and no change
 * goes unannounced after a crash (a held event is published when its hold expires).
 */
export class ContactLifecycle {
  constructor(
    private readonly contacts: ContactStore,
    private readonly outbox: Outbox,
    private readonly now: () => Date,
  ) {}

  async move(scope: TenantScope, contact: ContactRef, status: ContactStatus, m: Move = {}): Promise<Contact | null> {
    const now = this.now();
    const events = [...(status !== contact.status ? [statusChanged(scope.tenantId, contact, status, now, m.endReason)] : []), ...(m.events ?? [])];
    const ids = await this.outbox.addRecords(events, { hold: true });
    const change: ContactChange = {
      $set: { ...m.set, status, updatedAt: now, ...(m.endReason !== undefined && { endReason: m.endReason }) },
      ...(m.unset?.length && { $unset: Object.fromEntries(m.unset.map((f) => [f, 1])) }),
    };
    let updated: Contact | null;
    try {
      updated = await this.contacts.update(scope, contact.id, change, m.from);
    } catch (err) {
      await this.outbox.discard(ids).catch(() => undefined); // the write's own error, rethrown below, is the one the caller must see
      throw err;
    }
    if (updated) await this.outbox.release(ids);
    else await this.outbox.discard(ids);
    return updated;
  }
}
