import type { TenantScope } from '@voiceapi/kit/grpc';
import type { Contact, ContactRef, ContactStatus } from '../domain/contact';
import type { ContactChange, ContactStore } from '../store/contact-store';
import type { LeadEvent, LeadEvents, MadeEvent, StatusChangeReaders } from './ports';

interface Prepared {
  events: MadeEvent[];
  change: ContactChange;
  now: Date;
}

export interface Move {
  set?: Record<string, unknown>;
  unset?: string[];
  /** Only from these statuses (the move is skipped otherwise). */
  from?: readonly ContactStatus[];
  /** Only while the contact also matches these fields (ignored without `from`). */
  where?: Record<string, unknown>;
  endReason?: string;
  /** More events announced by the same change (a dial request). */
  events?: LeadEvent[];
  /**
   * The cause repeats until done, and a repeat finding the move made announces it again, so the event is sent
   * after the write instead of stored before it (decision 0150). Without `from`, the caller spots repeats.
   */
  atOnce?: boolean;
}

/**
 * Every status change after ingest, announced with its write. Only what a reader acts on is announced: the change
 * if the tenant reads `contact.status_changed`, a cancellation always (telephony drops waiting dials). `lastMove`
 * keeps the change so it can be announced again under the same event id.
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

  /** `move` without reading back: one that announces nothing shares a write with concurrent moves. */
  async apply(scope: TenantScope, contact: ContactRef, status: ContactStatus, m: Move = {}): Promise<void> {
    const prepared = await this.prepare(scope, contact, status, m);
    if (prepared.events.length === 0) await this.contacts.apply(scope, contact.id, prepared.change, m.from, m.where);
    else await this.write(scope, contact.id, status, m, prepared);
  }

  /**
   * Re-announces the last move if it went from `from` into `to`, under the same id: a crash between write and
   * send loses the event, never the repeat (decision 0150). Readers are not asked: webhooks drops unread events.
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
    // Not moved: this repeat may be all that is left of the move's event.
    const current = await this.contacts.get(scope, id);
    if (current) await this.announceAgain(scope, current, m.from, [status]);
    return null;
  }
}
