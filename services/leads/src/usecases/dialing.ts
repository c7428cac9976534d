// Over 300 lines because a dial is one story here: checks, request (and re-request), outcome and what follows.
import { scopeOfRecord, type TenantScope } from '@voiceapi/kit/grpc';
import { type Logger } from '@voiceapi/kit/service';
import { windowDecision } from '../domain/calling-window';
import { dialId, type Campaign, type Contact, type ContactStatus } from '../domain/contact';
import type { CampaignStore } from '../store/campaign-store';
import type { ContactStore } from '../store/contact-store';
import type { DoNotCallStore } from '../store/do-not-call-store';
import type { FollowupStore } from '../store/followup-store';
import { dialItemId, type ScheduledItem, type ScheduleStore } from '../store/schedule-store';
import type { ComplianceChecks } from './compliance';
import type { ContactLifecycle } from './lifecycle';
import type { MessageFollowups } from './messaging';
import type { LeadEvents, MadeEvent } from './ports';

/** Contacts whose dials the relay's next holder requests again in one pass, at most (decision 0149). */
const REANNOUNCE_LIMIT = 20_000;

export type ClaimRefusal =
  'not_found' | 'sandbox' | 'not_pending' | 'already_claimed' | 'consent_required' | 'do_not_call' | 'outside_window';

export type ClaimResult =
  | { allowed: true; contact: Contact; campaign: Campaign }
  | { allowed: false; refusal: ClaimRefusal; nextAttemptAt?: Date; contact?: Contact };

export interface CallOutcome {
  tenantId: string;
  contactId: string;
  callId: string;
  /** `completed`, `no_answer`, `busy`, `failed`, `voicemail`. */
  outcome: string;
  optOut: boolean;
  endedAt: Date;
  /** Telephony's reason beyond the outcome, e.g. `insufficient_credits` (never dialled). */
  endReason?: string;
}

const RETRIED = new Set(['no_answer', 'busy']);
const DONE = new Set(['completed', 'voicemail']);
const OUTCOME_STATUSES: readonly ContactStatus[] = ['completed', 'scheduled', 'failed', 'cancelled'];

/** From accepted lead to calls: scheduled dials and follow-ups, claim-time checks, call outcomes. */
export class Dialing {
  constructor(
    private readonly d: {
      campaigns: CampaignStore;
      contacts: ContactStore;
      followups: FollowupStore;
      schedule: ScheduleStore;
      dnc: DoNotCallStore;
      checks: ComplianceChecks;
      lifecycle: ContactLifecycle;
      events: LeadEvents;
      messageFollowups: MessageFollowups;
      log: Logger;
      now: () => Date;
    },
  ) {}

  /**
   * Checks again, then claims: the move `queued` -> `dialing` at this dispatch matches once per dial id, so a
   * redelivered request dials nobody twice.
   */
  async claim(scope: TenantScope, contactId: string, id: string): Promise<ClaimResult> {
    const contact = await this.d.contacts.get(scope, contactId);
    if (!contact) return { allowed: false, refusal: 'not_found' };
    if (contact.sandbox) return { allowed: false, refusal: 'sandbox', contact };
    if (contact.status !== 'queued' || id !== dialId(contact.id, contact.dispatches)) {
      const claimed = contact.status === 'dialing' && id === dialId(contact.id, contact.dispatches);
      // A claim tried again: its move's event may be all a crash took (decision 0150).
      if (claimed) await this.d.lifecycle.announceAgain(scope, contact, ['queued']);
      return { allowed: false, refusal: claimed ? 'already_claimed' : 'not_pending', contact };
    }
    const campaign = await this.d.campaigns.get(scope, contact.campaignId);
    if (!campaign) return { allowed: false, refusal: 'not_found', contact };
    const gate = await this.gate(scope, contact, campaign);
    if (gate) return gate;
    const moved = await this.d.lifecycle.move(scope, contact, 'dialing', {
      set: { attempts: contact.attempts + 1 },
      from: ['queued'],
      where: { dispatches: contact.dispatches },
      atOnce: true,
    });
    if (!moved) return { allowed: false, refusal: 'already_claimed', contact };
    return { allowed: true, contact: moved, campaign };
  }

  /** Dispatches what is due; returns how many items, and when the next falls due. */
  async dispatchDue(limit = 200): Promise<{ handled: number; nextDueAt?: Date }> {
    const { items, nextDueAt } = await this.d.schedule.due(this.d.now(), limit);
    for (const item of items) {
      try {
        if (item.kind === 'dial') await this.dispatchDial(item);
        else await this.dispatchFollowup(item);
      } catch (err) {
        // A failed item stays due and is tried next time.
        this.d.log.warn({ err, item: item.id }, 'scheduled item failed; will retry');
      }
    }
    return { handled: items.length, ...(nextDueAt && { nextDueAt }) };
  }

  async onCallStarted(tenantId: string, contactId: string, campaignId?: string): Promise<void> {
    const scope = scopeOfRecord(tenantId);
    // With the campaign named, no read is needed: only a contact still dialling moves.
    const contact = campaignId
      ? { id: contactId, campaignId, status: 'dialing' as const, sandbox: false }
      : await this.d.contacts.get(scope, contactId);
    if (contact?.status === 'dialing')
      await this.d.lifecycle.apply(scope, contact, 'in_call', { from: ['dialing'], atOnce: true });
    // Read (a call that names no campaign) and moved already: a redelivery (decision 0150).
    else if (contact && 'lastMove' in contact)
      await this.d.lifecycle.announceAgain(scope, contact, ['dialing'], ['in_call']);
  }

  async onCallEnded(e: CallOutcome): Promise<void> {
    const scope = scopeOfRecord(e.tenantId);
    const contact = await this.d.contacts.get(scope, e.contactId);
    if (!contact) return; // erased meanwhile
    // Followed already (a redelivery): the outcome's move may be all a crash left of it (decision 0150).
    if (contact.lastCallId === e.callId)
      return this.d.lifecycle.announceAgain(scope, contact, ['dialing', 'in_call'], OUTCOME_STATUSES);
    const last = { lastCallId: e.callId, lastOutcome: e.outcome };
    if (e.optOut) {
      await this.d.dnc.addTenant(scope, contact.phone, 'opted_out', this.d.now());
      await this.dropPending(scope, contact.id);
      const status = contact.status === 'cancelled' ? 'cancelled' : 'completed';
      await this.d.lifecycle.apply(scope, contact, status, {
        set: last,
        unset: ['nextAttemptAt'],
        endReason: 'opted_out',
        atOnce: true,
      });
      return;
    }
    if (contact.status === 'cancelled') {
      await this.d.lifecycle.apply(scope, contact, 'cancelled', { set: last });
      return;
    }
    if (DONE.has(e.outcome)) {
      await this.d.lifecycle.apply(scope, contact, 'completed', { set: last, unset: ['nextAttemptAt'], atOnce: true });
      return;
    }
    const campaign = await this.d.campaigns.get(scope, contact.campaignId);
    if (RETRIED.has(e.outcome) && campaign && contact.attempts < campaign.maxAttempts) {
      const earliest = new Date(e.endedAt.getTime() + campaign.retryAfterMinutes * 60_000);
      const opens = windowDecision(campaign.callingWindow, contact.timeZones ?? ['UTC'], earliest);
      const dueAt = opens.open ? earliest : (opens.nextOpenAt ?? earliest);
      await this.d.schedule.put(scope, { id: dialItemId(contact.id), contactId: contact.id, kind: 'dial', dueAt });
      await this.d.lifecycle.apply(scope, contact, 'scheduled', {
        set: { ...last, nextAttemptAt: dueAt },
        atOnce: true,
      });
      return;
    }
    const endReason = RETRIED.has(e.outcome)
      ? 'max_attempts'
      : e.endReason === 'insufficient_credits'
        ? 'insufficient_credits'
        : 'call_failed';
    await this.d.lifecycle.apply(scope, contact, 'failed', {
      set: last,
      unset: ['nextAttemptAt'],
      endReason,
      atOnce: true,
    });
  }

  /** The checks that can change after ingest: a refusal (the contact moved accordingly), or undefined. */
  private async gate(scope: TenantScope, contact: Contact, campaign: Campaign): Promise<ClaimResult | undefined> {
    if (contact.consent?.outboundCall !== true) {
      await this.stop(scope, contact, 'consent_required');
      return { allowed: false, refusal: 'consent_required', contact };
    }
    const zones = {
      timeZones: contact.timeZones ?? ['UTC'],
      timeZoneSource: contact.timeZones ? ('number' as const) : ('fallback' as const),
    };
    const checks = await this.d.checks.run(scope, contact.phone, campaign.callingWindow, zones, this.d.now());
    if (checks.doNotCall.tenant || checks.doNotCall.platform) {
      await this.stop(scope, contact, 'do_not_call');
      return { allowed: false, refusal: 'do_not_call', contact };
    }
    if (!checks.window.open) {
      const dueAt = checks.window.nextOpenAt ?? new Date(this.d.now().getTime() + 24 * 3600_000);
      await this.d.schedule.put(scope, { id: dialItemId(contact.id), contactId: contact.id, kind: 'dial', dueAt });
      await this.d.lifecycle.move(scope, contact, 'scheduled', { set: { nextAttemptAt: dueAt } });
      return { allowed: false, refusal: 'outside_window', nextAttemptAt: dueAt, contact };
    }
    return undefined;
  }

  private async stop(scope: TenantScope, contact: Contact, endReason: string): Promise<void> {
    await this.dropPending(scope, contact.id);
    await this.d.lifecycle.move(scope, contact, 'failed', { unset: ['nextAttemptAt'], endReason });
  }

  private async dropPending(scope: TenantScope, contactId: string): Promise<void> {
    await this.d.schedule.dropContact(scope, contactId);
    await this.d.followups.cancelPending(scope, contactId);
  }

  /**
   * Re-requests dials of contacts queued since `since`: a relay holder may have died between the write and the
   * request (decision 0149). A repeat costs a message, never a call (refused at its claim).
   */
  async reannounceQueued(since: Date, limit = REANNOUNCE_LIMIT): Promise<number> {
    return this.requestAgain(await this.d.contacts.queuedSince(since, limit));
  }

  /** Each under its first announcement's id. */
  private async requestAgain(queued: readonly { tenantId: string; contact: Contact }[]): Promise<number> {
    const campaigns = new Map<string, Promise<Campaign | null>>();
    const events: MadeEvent[] = [];
    for (const { tenantId, contact } of queued) {
      const scope = scopeOfRecord(tenantId);
      const key = `${tenantId}/${contact.campaignId}`;
      if (!campaigns.has(key)) campaigns.set(key, this.d.campaigns.get(scope, contact.campaignId));
      const campaign = await campaigns.get(key)!;
      if (!campaign) continue;
      const at = this.d.now();
      const dispatch = contact.dispatches;
      events.push(this.d.events.make({ kind: 'dialRequested', tenantId, contact, campaign, dispatch, at }));
    }
    const always = { applied: 'always' as const, why: 'a repeated dial request is refused at its claim if dialled' };
    await this.d.events.announce(events, () => Promise.resolve(), { readBack: always });
    return events.length;
  }

  /** Checked again, then requested (its id fixed by the dispatch count). */
  private async dispatchDial(item: ScheduledItem): Promise<void> {
    const scope = scopeOfRecord(item.tenantId);
    const contact = await this.d.contacts.get(scope, item.contactId);
    // Queued with its entry still here: the move's request failed to go out after it (decision 0149).
    if (contact?.status === 'queued' && !contact.sandbox)
      await this.requestAgain([{ tenantId: item.tenantId, contact }]);
    if (!contact || contact.status !== 'scheduled' || contact.sandbox) {
      await this.d.schedule.remove(scope, item.id);
      return;
    }
    await this.requestDial(scope, contact, item);
  }

  private async requestDial(scope: TenantScope, contact: Contact, item: ScheduledItem): Promise<boolean> {
    const campaign = await this.d.campaigns.get(scope, contact.campaignId);
    if (!campaign) {
      await this.stop(scope, contact, 'campaign_missing');
      return false;
    }
    const gate = await this.gate(scope, contact, campaign);
    if (gate) {
      // Outside the window, the same entry stays, due later.
      if (gate.allowed === false && gate.refusal !== 'outside_window') await this.d.schedule.remove(scope, item.id);
      return false;
    }
    const dispatch = contact.dispatches + 1;
    const now = this.d.now();
    // An earlier try of this dispatch that died stored the same event.
    const event = { kind: 'dialRequested' as const, tenantId: scope.tenantId, contact, campaign, dispatch, at: now };
    const moved = await this.d.lifecycle.move(scope, contact, 'queued', {
      set: { dispatches: dispatch },
      unset: ['nextAttemptAt'],
      from: [contact.status],
      events: [event],
    });
    await this.d.schedule.remove(scope, item.id);
    return moved !== null;
  }

  private async dispatchFollowup(item: ScheduledItem): Promise<void> {
    const scope = scopeOfRecord(item.tenantId);
    const followup = item.followupId ? await this.d.followups.get(scope, item.followupId) : null;
    const contact = await this.d.contacts.get(scope, item.contactId);
    if (!followup || followup.status !== 'scheduled' || !contact) {
      await this.d.schedule.remove(scope, item.id);
      return;
    }
    if (contact.status === 'cancelled') {
      await this.d.followups.finish(scope, followup.id, 'cancelled');
    } else if (contact.sandbox) {
      await this.d.followups.finish(scope, followup.id, 'done');
    } else if (followup.channel === 'call') {
      if (['queued', 'dialing', 'in_call'].includes(contact.status)) {
        // The dial under way is the follow-up; if queued, its request may have been lost (decision 0149).
        if (contact.status === 'queued') await this.requestAgain([{ tenantId: item.tenantId, contact }]);
        await this.d.followups.finish(scope, followup.id, 'done');
      } else {
        const placed = await this.requestDial(scope, contact, item);
        // Not placed: scheduled for the window (that dial is the follow-up) or refused (the contact says why).
        const after = placed ? undefined : await this.d.contacts.get(scope, contact.id);
        if (placed || after?.status === 'scheduled') await this.d.followups.finish(scope, followup.id, 'done');
        else await this.d.followups.finish(scope, followup.id, 'refused', after?.endReason ?? 'refused');
      }
    } else {
      try {
        await this.d.messageFollowups.send(scope, contact, followup.channel);
        await this.d.followups.finish(scope, followup.id, 'done');
      } catch (err) {
        this.d.log.warn({ err, followup: followup.id }, 'message follow-up could not be rendered');
        await this.d.followups.finish(scope, followup.id, 'refused', 'template_unavailable');
      }
    }
    await this.d.schedule.remove(scope, item.id);
  }
}
