import { commonReasons, notFound, validationError } from '@voiceapi/kit/errors';
import { type TenantScope } from '@voiceapi/kit/grpc';
import { isChannel, type Contact } from '../domain/contact';
import type { ContactStore } from '../store/contact-store';
import type { FollowupStore } from '../store/followup-store';
import type { Followup } from '../domain/followup';
import type { MessageStore } from '../store/message-store';
import { followupItemId, type ScheduleStore } from '../store/schedule-store';
import type { ContactLifecycle } from './lifecycle';
import type { LeadEvents } from './ports';

/** How far ahead a follow-up may be scheduled. */
const MAX_FOLLOWUP_AHEAD_MS = 365 * 24 * 3600_000;

/** A tenant's contacts: read, cancel, follow up, erase. */
export class Contacts {
  constructor(
    private readonly d: {
      contacts: ContactStore;
      followups: FollowupStore;
      schedule: ScheduleStore;
      messages: MessageStore;
      lifecycle: ContactLifecycle;
      outbox: LeadEvents;
      now: () => Date;
    },
  ) {}

  async get(scope: TenantScope, id: string): Promise<Contact> {
    const c = await this.d.contacts.get(scope, id);
    if (!c) throw notFound('contact');
    return c;
  }

  /** Cancelled: its pending dials and follow-ups are dropped (a dial already requested is refused when claimed). */
  async cancel(scope: TenantScope, id: string): Promise<Contact> {
    const contact = await this.get(scope, id);
    await this.d.schedule.dropContact(scope, id);
    await this.d.followups.cancelPending(scope, id);
    if (contact.status === 'cancelled') return contact;
    const moved = await this.d.lifecycle.move(scope, contact, 'cancelled', { unset: ['nextAttemptAt'] });
    if (!moved) throw notFound('contact');
    return moved;
  }

  /**
   * Erases the contact's personal data here and announces `ContactDeleted`, so telephony erases its calls' data.
   * Do-not-call entries stay: an opt-out must outlive the contact.
   */
  async delete(scope: TenantScope, id: string): Promise<void> {
    await this.get(scope, id);
    // A repeated delete after a partial failure announces the same event (its id is the contact's).
    const deleted = await this.d.outbox.announce(
      [this.d.outbox.make({ kind: 'contactDeleted', tenantId: scope.tenantId, contactId: id, at: this.d.now() })],
      () => this.erase(scope, id),
      { readBack: this.d.contacts.erased(scope, id) },
    );
    if (!deleted) throw notFound('contact');
  }

  /** Pending work first, so nothing is dispatched for a contact half erased; the contact last. */
  private async erase(scope: TenantScope, id: string): Promise<boolean> {
    await this.d.schedule.dropContact(scope, id);
    await this.d.followups.eraseContact(scope, id);
    await this.d.messages.eraseContact(scope, id);
    return this.d.contacts.delete(scope, id);
  }

  async followUp(
    scope: TenantScope,
    id: string,
    input: { scheduledAt: Date; channel?: string; note?: string },
  ): Promise<Followup> {
    const contact = await this.get(scope, id);
    if (contact.status === 'cancelled')
      throw commonReasons.error('conflict', 'the contact is cancelled; it gets no follow-ups');
    const now = this.d.now();
    const at = input.scheduledAt.getTime();
    if (!(at > now.getTime()))
      throw validationError('scheduledAt must be in the future', [
        { path: 'scheduledAt', message: 'not in the future' },
      ]);
    if (at > now.getTime() + MAX_FOLLOWUP_AHEAD_MS)
      throw validationError('scheduledAt must be within a year', [
        { path: 'scheduledAt', message: 'more than a year ahead' },
      ]);
    const channel = input.channel ?? (contact.channels.includes('call') ? 'call' : contact.channels[0]!);
    if (!isChannel(channel) || !contact.channels.includes(channel)) {
      throw validationError(`channel must be one of the contact's channels (${contact.channels.join(', ')})`, [
        { path: 'channel', message: 'not a channel of this contact' },
      ]);
    }
    const followup: Followup = {
      id: this.d.followups.newId(),
      contactId: id,
      scheduledAt: input.scheduledAt,
      channel,
      ...(input.note !== undefined && { note: input.note }),
      status: 'scheduled',
      createdAt: now,
    };
    // Schedule entry first: a follow-up never lacks its work (an entry without its follow-up is dropped when due).
    await this.d.schedule.put(scope, {
      id: followupItemId(id, followup.id),
      contactId: id,
      kind: 'followup',
      followupId: followup.id,
      dueAt: input.scheduledAt,
    });
    return this.d.followups.create(scope, followup);
  }
}
