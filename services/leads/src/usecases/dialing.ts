// Over 300 lines because a dial is one story here: its checks, its request (and its request again), its outcome and what follows it.
import { scopeOfRecord, type Logger, type TenantScope } from '@voiceapi/kit';
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

/** What telephony reports when a lead's call ends. */
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
/** Where a call's outcome moves its contact. */
const OUTCOME_STATUSES: readonly ContactStatus[] = ['completed', 'scheduled', 'failed', 'cancelled'];

/** Live work runs in the tenant's live mode: only live contacts are ever scheduled or dialled. */

/**
 * Everything between an accepted lead and its calls: dispatching scheduled dials and follow-ups,
 * the checks again when telephony claims a dial, and following call outcomes (retries, opt-outs).
 */
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
   * The checks at the moment of dialling, then the claim: a dial id is allowed once, so a
   * redelivered dial request dials nobody twice, and a contact cancelled, opted out or put on a
   * do-not-call list after ingest is never dialled. The claim is the contact's own move from
   * `queued` at this dispatch to `dialing`: of claims of one dial id, only the first matches.
   */
  async claim(scope: TenantScope, contactId: string, id: string): Promise<ClaimResult> {
    const contact = await this.d.contacts.get(scope, contactId);
    if (!contact) return { allowed: false, refusal: 'not_found' };
    if (contact.sandbox) return { allowed: false, refusal: 'sandbox', contact };
    if (contact.status !== 'queued' || id !== dialId(contact.id, contact.dispatches)) {
      // Cancelled, already dialled, or a stale request for an earlier dispatch.
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

  /** Dispatches what is due; how many items were handled, and when the next one falls due. */
  async dispatchDue(limit = 200): Promise<{ handled: number; nextDueAt?: Date }> {
    const { items, nextDueAt } = await this.d.schedule.due(this.d.now(), limit);
    for (const item of items) {
      try {
        if (item.kind === 'dial') await this.dispatchDial(item);
        else await this.dispatchFollowup(item);
      } catch (err) {
        // One item's failure never holds up the others; it stays due and is tried next time.
        this.d.log.warn({ err, item: item.id }, 'scheduled item failed; will retry');
      }
    }
    return { handled: items.length, ...(nextDueAt && { nextDueAt }) };
  }

  /** The called party picked up: a contact being dialled is now in a call. */
  async onCallStarted(tenantId: string, contactId: string, campaignId?: string): Promise<void> {
    const scope = scopeOfRecord(tenantId);
    // The call names the contact's campaign, all the move announces besides: only a contact still
    // being dialled moves, so it needs no read of its own.
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
      // The called party asked not to be called again: at once on the tenant's list, and every
      // pending dial and follow-up dropped.
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

  /**
   * The checks that can change after ingest, for a dial about to be requested or placed: a
   * refusal (the contact failed for do-not-call, or moved to when the window opens), or undefined.
   */
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

  /** A scheduled dial whose time came: checked again, then requested (its id fixed by the dispatch count). */
  /**
   * Requests again the dials of live contacts queued since `since` (decision 0149). A dial request
   * goes out after its contact's write, so a relay holder that died between the two lost it; the
   * next holder calls this. A request telephony holds already is held once, one dialled since is
   * refused at its claim, so a repeat costs a message and no call. The number requested.
   */
  async reannounceQueued(since: Date, limit = REANNOUNCE_LIMIT): Promise<number> {
    return this.requestAgain(await this.d.contacts.queuedSince(since, limit));
  }

  /** Dial requests of queued contacts announced again, each under its first announcement's id. */
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
      // Refused for good, or moved to the window's opening (the same entry, due later).
      if (gate.allowed === false && gate.refusal !== 'outside_window') await this.d.schedule.remove(scope, item.id);
      return false;
    }
    const dispatch = contact.dispatches + 1;
    const now = this.d.now();
    // Announced with the move (an earlier try of this dispatch that died stored the same event).
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
      // A sandbox contact's follow-up is recorded and done; nothing leaves the platform.
      await this.d.followups.finish(scope, followup.id, 'done');
    } else if (followup.channel === 'call') {
      if (['queued', 'dialing', 'in_call'].includes(contact.status)) {
        // A dial is under way already: it is the follow-up. Queued with this entry still here, the
        // request may have failed to go out after the move (decision 0149): requested again.
        if (contact.status === 'queued') await this.requestAgain([{ tenantId: item.tenantId, contact }]);
        await this.d.followups.finish(scope, followup.id, 'done');
      } else {
        const placed = await this.requestDial(scope, contact, item);
        // Not placed: either scheduled for the window's opening (the follow-up's dial is then
        // that scheduled dial) or refused by the checks (the contact says why).
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
