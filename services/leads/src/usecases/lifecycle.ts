import type { TenantScope } from '@voiceapi/kit';
import type { Contact, ContactRef, ContactStatus } from '../domain/contact';
import type { ContactChange, ContactStore } from '../store/contact-store';
import type { LeadEvent, LeadEvents, MadeEvent, StatusChangeReaders } from './ports';

interface Prepared {
  events: MadeEvent[];
  change: ContactChange;
  now: Date;
}

export interface Move {
  /** Fields set with the status. */
  set?: Record<string, unknown>;
  unset?: string[];
  /** Only from these statuses (the move is skipped otherwise). */
  from?: readonly ContactStatus[];
  /** Only while the contact also matches these fields (with `from`; ignored without it). */
  where?: Record<string, unknown>;
  endReason?: string;
  /** More events announced by the same change (a dial request). */
  events?: LeadEvent[];
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

  /** The move, and the contact after it (null: it was not in a status `from` names, or not there). */
  async move(scope: TenantScope, contact: ContactRef, status: ContactStatus, m: Move = {}): Promise<Contact | null> {
    const prepared = await this.prepare(scope, contact, status, m);
    return this.write(scope, contact.id, status, m, prepared);
  }

  /**
   * The move, for a caller that needs nothing back (a call's progress and outcome): one that
   * announces nothing is then written with the moves asked at once, and nothing is read.
   */
  async apply(scope: TenantScope, contact: ContactRef, status: ContactStatus, m: Move = {}): Promise<void> {
    const prepared = await this.prepare(scope, contact, status, m);
    if (prepared.events.length === 0) await this.contacts.apply(scope, contact.id, prepared.change, m.from, m.where);
    else await this.write(scope, contact.id, status, m, prepared);
  }

  /** The events that announce the move (those a reader acts on) and the contact's change. */
  private async prepare(scope: TenantScope, contact: ContactRef, status: ContactStatus, m: Move): Promise<Prepared> {
    const now = this.now();
    const changes = status !== contact.status;
    const { tenantId } = scope;
    const events: LeadEvent[] = [
      ...(changes && (await this.readers.wanted(scope))
        ? [
            {
              kind: 'statusChanged' as const,
              tenantId,
              before: contact,
              status,
              at: now,
              ...(m.endReason !== undefined && { endReason: m.endReason }),
            },
          ]
        : []),
      ...(changes && status === 'cancelled'
        ? [{ kind: 'contactCancelled' as const, tenantId, contactId: contact.id, at: now }]
        : []),
      ...(m.events ?? []),
    ];
    const change: ContactChange = {
      $set: { ...m.set, status, updatedAt: now, ...(m.endReason !== undefined && { endReason: m.endReason }) },
      ...(m.unset?.length && { $unset: Object.fromEntries(m.unset.map((f) => [f, 1])) }),
    };
    return { events: events.map((e) => this.events.make(e)), change, now };
  }

  private write(
    scope: TenantScope,
    id: string,
    status: ContactStatus,
    m: Move,
    { events, change, now }: Prepared,
  ): Promise<Contact | null> {
    return this.events.announce(events, () => this.contacts.update(scope, id, change, m.from, m.where), {
      applied: (updated) => updated !== null,
      readBack: this.contacts.moved(scope, id, status, now),
    });
  }
}
