import { Coalescer, scopeOfRecord, type EventRecord, type Logger, type Outbox, type TenantScope } from '@voiceapi/kit';
import type { Contact } from '../domain/contact';
import type { ContactStore } from '../store/contact-store';
import type { MessageStore } from '../store/message-store';
import type { Message } from '../domain/message';
import { dialItemId, type ScheduleStore } from '../store/schedule-store';

/** A live contact ready to be stored, with what it asks of others. */
export interface Acceptance {
  scope: TenantScope;
  contact: Contact;
  messages: Message[];
  events: EventRecord[];
}

/**
 * Stores accepted live contacts so that nothing is lost and nothing announced early: their events
 * held first, then their messages, scheduled dials and the contacts, then the events released. A
 * crash in between leaves held events that are published when their hold expires; a dial is
 * claimed before it is placed (ClaimDial), so a dial for a contact never written dials nobody.
 *
 * Leads that arrive together are written together (group commit): three round trips for a batch
 * instead of three per lead. If a batch fails, each of its leads is tried on its own, so one bad
 * lead fails alone.
 */
export class AcceptWriter {
  private readonly batches: Coalescer<Acceptance, Contact | Error>;

  constructor(private readonly d: { contacts: ContactStore; messages: MessageStore; schedule: ScheduleStore; outbox: Outbox; log: Logger }) {
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
    // The events are keyed by the new contacts' ids: no replica can have stored one of them before.
    const ids = await this.d.outbox.addRecords(
      items.flatMap((a) => a.events),
      { hold: true, freshKeys: true },
    );
    try {
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
    } catch (err) {
      await this.d.outbox.discard(ids).catch((discardErr: unknown) => this.d.log.warn({ err: discardErr, events: ids.length }, 'could not discard the held events of a failed write'));
      throw err;
    }
    await this.d.outbox.release(ids);
  }
}

function byTenant(items: Acceptance[]): Map<string, Acceptance[]> {
  const out = new Map<string, Acceptance[]>();
  for (const a of items) out.set(a.scope.tenantId, [...(out.get(a.scope.tenantId) ?? []), a]);
  return out;
}
