import { Coalescer, scopeOfRecord, type EventRecord, type Logger, type ReadBack, type TenantScope } from '@voiceapi/kit';
import type { Contact } from '../domain/contact';
import type { ContactStore } from '../store/contact-store';
import type { MessageStore } from '../store/message-store';
import type { Message } from '../domain/message';
import { dialItemId, type ScheduleStore } from '../store/schedule-store';
import type { LeadEvents } from './ports';

/** A live contact ready to be stored, with what it asks of others. */
export interface Acceptance {
  scope: TenantScope;
  contact: Contact;
  messages: Message[];
  events: EventRecord[];
}

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
  private readonly batches: Coalescer<Acceptance, Contact | Error>;

  constructor(private readonly d: { contacts: ContactStore; messages: MessageStore; schedule: ScheduleStore; outbox: LeadEvents; log: Logger }) {
    this.batches = new Coalescer(async (items) => {
      try {
        await this.write(items);
        return items.map((a) => a.contact);
      } catch (err) {
        if (items.length === 1) return [err instanceof Error ? err : new Error(String(err))];
        this.d.log.warn({ err, leads: items.length }, 'a batch of leads failed; writing them one by one');
        return Promise.all(
          items.map((a) =>
            this.write([a]).then(
              () => a.contact,
              (e: unknown) => (e instanceof Error ? e : new Error(String(e))),
            ),
          ),
        );
      }
    });
  }

  async accept(a: Acceptance): Promise<Contact> {
    const out = await this.batches.run(a);
    if (out instanceof Error) throw out;
    return out;
  }

  private async write(items: Acceptance[]): Promise<void> {
    // A batch may be written part-way: each contact's events are read back by that contact.
    const readBacks = new Map<string, ReadBack>(items.flatMap((a) => a.events.map((e) => [e.eventId, this.d.contacts.stored(a.scope, a.contact.id)] as const)));
    // The events are keyed by the new contacts' ids: no replica can have stored one of them before.
    await this.d.outbox.announce(
      items.flatMap((a) => a.events),
      () => this.writeAll(items),
      { freshKeys: true, readBack: (e) => readBacks.get(e.eventId)! },
    );
  }

  /** Messages and scheduled dials first, the contacts last: a contact stored has all it needs. */
  private async writeAll(items: Acceptance[]): Promise<void> {
    for (const [tenantId, group] of byTenant(items)) {
      const scope = scopeOfRecord(tenantId);
      await this.d.messages.createMany(
        scope,
        group.flatMap((a) => a.messages),
      );
      for (const a of group) {
        if (a.contact.status === 'scheduled' && a.contact.nextAttemptAt) {
          await this.d.schedule.put(scope, { id: dialItemId(a.contact.id), contactId: a.contact.id, kind: 'dial', dueAt: a.contact.nextAttemptAt });
        }
      }
      await this.d.contacts.createMany(
        scope,
        group.map((a) => a.contact),
      );
    }
  }
}

function byTenant(items: Acceptance[]): Map<string, Acceptance[]> {
  const out = new Map<string, Acceptance[]>();
  for (const a of items) out.set(a.scope.tenantId, [...(out.get(a.scope.tenantId) ?? []), a]);
  return out;
}
