import { Coalescer, scopeOfRecord, type Logger, type ReadBack, type TenantScope } from '@voiceapi/kit';
import type { Contact } from '../domain/contact';
import type { ContactStore } from '../store/contact-store';
import type { MessageStore } from '../store/message-store';
import type { Message } from '../domain/message';
import { dialItemId, type ScheduleStore } from '../store/schedule-store';
import type { LeadEvent, LeadEvents, MadeEvent } from './ports';

const STORED_BEFORE = Symbol('stored before');

/** A live contact ready to be stored, with what it asks of others. */
export interface Acceptance {
  scope: TenantScope;
  contact: Contact;
  messages: Message[];
  events: LeadEvent[];
}

/** An acceptance waiting in a batch: its events made already, in its own request's context. */
type Queued = Omit<Acceptance, 'events'> & { events: MadeEvent[] };

/**
 * Stores accepted live contacts so that nothing is lost and nothing announced early: their
 * messages, scheduled dials and the contacts are written with their events (`LeadEvents.announce`),
 * each contact's events going out only if that contact was stored.
 *
 * Leads that arrive together are written together (group commit): three round trips for a batch
 * instead of three per lead. If a batch fails, each of its leads is tried on its own, so one bad
 * lead fails alone.
 */
export class AcceptWriter {
  /** Each lead's outcome: its contact stored now, `stored before` (an ingest sent again), or its failure. */
  private readonly batches: Coalescer<Queued, Contact | typeof STORED_BEFORE | Error>;

  constructor(
    private readonly d: {
      contacts: ContactStore;
      messages: MessageStore;
      schedule: ScheduleStore;
      outbox: LeadEvents;
      log: Logger;
    },
  ) {
    this.batches = new Coalescer(async (items) => {
      try {
        const before = await this.write(items);
        return items.map((a) => (before.has(a.contact.id) ? STORED_BEFORE : a.contact));
      } catch (err) {
        if (items.length === 1) return [err instanceof Error ? err : new Error(String(err))];
        this.d.log.warn({ err, leads: items.length }, 'a batch of leads failed; writing them one by one');
        return Promise.all(
          items.map((a) =>
            this.write([a]).then(
              (before) => (before.has(a.contact.id) ? STORED_BEFORE : a.contact),
              (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
            ),
          ),
        );
      }
    });
  }

  /** The contact stored; `storedBefore` when a try of the same ingest stored it first (it is answered as stored then). */
  async accept(a: Acceptance): Promise<{ contact: Contact; storedBefore: boolean }> {
    // Made here, not when the batch is written: each event carries its own lead's trace.
    const out = await this.batches.run({ ...a, events: a.events.map((e) => this.d.outbox.make(e)) });
    if (out instanceof Error) throw out;
    if (out !== STORED_BEFORE) return { contact: out, storedBefore: false };
    const stored = await this.d.contacts.get(a.scope, a.contact.id);
    if (!stored) throw new Error(`contact ${a.contact.id} was refused as stored before but is not the tenant's`);
    return { contact: stored, storedBefore: true };
  }

  /** Writes the batch; answers the ids of the contacts stored before (see `ContactStore.createMany`). */
  private async write(items: Queued[]): Promise<Set<string>> {
    // A batch may be written part-way: each contact's events are read back by that contact.
    const readBacks = new Map<MadeEvent, ReadBack>(
      items.flatMap((a) => a.events.map((e) => [e, this.d.contacts.stored(a.scope, a.contact.id)] as const)),
    );
    // The events are keyed by the new contacts' ids: no other write can have stored an event of
    // one of them (a try of the same ingest sent again stores the same events, taken as its own).
    return this.d.outbox.announce(
      items.flatMap((a) => a.events),
      () => this.writeAll(items),
      { freshKeys: true, readBack: (e) => readBacks.get(e)! },
    );
  }

  /** Messages and scheduled dials first, the contacts last: a contact stored has all it needs. */
  private async writeAll(items: Queued[]): Promise<Set<string>> {
    const before = new Set<string>();
    for (const [tenantId, group] of byTenant(items)) {
      const scope = scopeOfRecord(tenantId);
      await this.d.messages.createMany(
        scope,
        group.flatMap((a) => a.messages),
      );
      await this.d.schedule.addNew(
        scope,
        group.flatMap((a) =>
          a.contact.status === 'scheduled' && a.contact.nextAttemptAt
            ? [
                {
                  id: dialItemId(a.contact.id),
                  contactId: a.contact.id,
                  kind: 'dial' as const,
                  dueAt: a.contact.nextAttemptAt,
                },
              ]
            : [],
        ),
      );
      const refused = await this.d.contacts.createMany(
        scope,
        group.map((a) => a.contact),
      );
      refused.forEach((id) => before.add(id));
    }
    return before;
  }
}

function byTenant(items: Queued[]): Map<string, Queued[]> {
  const out = new Map<string, Queued[]>();
  for (const a of items) out.set(a.scope.tenantId, [...(out.get(a.scope.tenantId) ?? []), a]);
  return out;
}
