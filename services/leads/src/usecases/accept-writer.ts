import { type ReadBack } from '@voiceapi/kit/events';
import { scopeOfRecord, type TenantScope } from '@voiceapi/kit/grpc';
import { type Logger } from '@voiceapi/kit/service';
import { Coalescer } from '@voiceapi/kit/work';
import type { Contact } from '../domain/contact';
import type { ContactStore } from '../store/contact-store';
import type { MessageStore } from '../store/message-store';
import type { Message } from '../domain/message';
import { dialItemId, type ScheduleStore } from '../store/schedule-store';
import type { LeadEvent, LeadEvents, MadeEvent } from './ports';

const STORED_BEFORE = Symbol('stored before');

export interface Acceptance {
  scope: TenantScope;
  contact: Contact;
  messages: Message[];
  events: LeadEvent[];
}

/** Its events made already, in its own request's context. */
type Queued = Omit<Acceptance, 'events'> & { events: MadeEvent[] };

/**
 * Stores accepted live contacts with their events, each contact's events going out only if it was stored.
 * Concurrent leads are written together (group commit); a failed batch is retried lead by lead.
 */
export class AcceptWriter {
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

  /** `storedBefore`: an earlier try of the same ingest stored it, and it is answered as stored. */
  async accept(a: Acceptance): Promise<{ contact: Contact; storedBefore: boolean }> {
    // Made here, not when the batch is written: each event carries its own lead's trace.
    const out = await this.batches.run({ ...a, events: a.events.map((e) => this.d.outbox.make(e)) });
    if (out instanceof Error) throw out;
    if (out !== STORED_BEFORE) return { contact: out, storedBefore: false };
    const stored = await this.d.contacts.get(a.scope, a.contact.id);
    if (!stored) throw new Error(`contact ${a.contact.id} was refused as stored before but is not the tenant's`);
    return { contact: stored, storedBefore: true };
  }

  /** Returns the ids of contacts stored before (see `ContactStore.createMany`). */
  private async write(items: Queued[]): Promise<Set<string>> {
    // A batch may be written part-way: each contact's events are read back by that contact.
    const readBacks = new Map<MadeEvent, ReadBack>(
      items.flatMap((a) => a.events.map((e) => [e, this.d.contacts.stored(a.scope, a.contact.id)] as const)),
    );
    // Keyed by the new contacts' ids: only a retry of the same ingest can have stored them.
    return this.d.outbox.announce(
      items.flatMap((a) => a.events),
      () => this.writeAll(items),
      { freshKeys: true, readBack: (e) => readBacks.get(e)! },
    );
  }

  /** Contacts last: a stored contact has all it needs. */
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
