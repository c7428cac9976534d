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
  /**
   * Its cause is repeated until it is done (a redelivered call event, a claim tried again), and each
   * repeat that finds the move made announces it again (`announceAgain`): its event is sent after the
   * write instead of stored before it (decision 0150). With `from`, a write that finds the move made
   * announces it again here; without, the caller tells a repeat (a call's outcome already followed).
   */
  atOnce?: boolean;
}

/**
 * Every status change of a contact after ingest goes through here, announced with the write
 * (`LeadEvents.announce`): no consumer hears of a change that did not happen, and no change goes
 * unannounced after a crash. What is announced is what a reader acts on: the change itself when
 * the tenant has an endpoint for `contact.status_changed` (`StatusChangeReaders`), a cancellation
 * always (telephony drops the contact's waiting dials); a change nobody reads is the write alone.
 * Every status change is kept on the contact as its `lastMove`, so it can be announced again with
 * the same event (its id is the contact's and the move's time).
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

  /**
   * Announces again the contact's last move, when it came from one of `from` into one of `to` (the
   * move a repeated cause made): a crash between the move's write and its event's send loses the
   * event, never the repeat (decision 0150). Under the same id, which readers skip or deliver again
   * as they would a redelivery. Whoever reads the tenant's changes now is not asked: a repeat is rare,
   * and an event nobody reads is dropped by webhooks.
   */
  async announceAgain(
    scope: TenantScope,
    contact: Contact,
    from: readonly ContactStatus[],
    to: readonly ContactStatus[] = [contact.status],
  ): Promise<void> {
    const last = contact.lastMove;
    // A move a release without `lastMove.to` made since (a rolling update) leaves an older move here.
    if (!last || last.to !== contact.status || !from.includes(last.from) || !to.includes(last.to)) return;
    const again = this.events.make({
      kind: 'statusChanged',
      tenantId: scope.tenantId,
      before: { ...contact, status: last.from },
      status: contact.status,
      at: last.at,
      ...(last.endReason !== undefined && { endReason: last.endReason }),
      atOnce: true,
    });
    await this.events.announce([again], () => Promise.resolve(), {
      readBack: { applied: 'always', why: 'the move was read from the contact: it happened' },
    });
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
              ...(m.atOnce && { atOnce: true }),
            },
          ]
        : []),
      ...(changes && status === 'cancelled'
        ? [{ kind: 'contactCancelled' as const, tenantId, contactId: contact.id, at: now }]
        : []),
      ...(m.events ?? []),
    ];
    const lastMove = {
      from: contact.status,
      to: status,
      at: now,
      ...(m.endReason !== undefined && { endReason: m.endReason }),
    };
    const change: ContactChange = {
      $set: {
        ...m.set,
        status,
        updatedAt: now,
        ...(m.endReason !== undefined && { endReason: m.endReason }),
        ...(changes && { lastMove }),
      },
      ...(m.unset?.length && { $unset: Object.fromEntries(m.unset.map((f) => [f, 1])) }),
    };
    return { events: events.map((e) => this.events.make(e)), change, now };
  }

  private async write(
    scope: TenantScope,
    id: string,
    status: ContactStatus,
    m: Move,
    { events, change, now }: Prepared,
  ): Promise<Contact | null> {
    const moved = await this.events.announce(events, () => this.contacts.update(scope, id, change, m.from, m.where), {
      applied: (updated) => updated !== null,
      readBack: this.contacts.moved(scope, id, status, now),
    });
    if (moved || !m.atOnce || !m.from || events.length === 0) return moved;
    // Not moved: a repeat of a cause whose move is made may be all that is left of its event.
    const current = await this.contacts.get(scope, id);
    if (current) await this.announceAgain(scope, current, m.from, [status]);
    return null;
  }
}
