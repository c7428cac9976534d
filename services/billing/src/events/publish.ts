import { eventRecord, type EventRecord, type Outbox, type TenantScope } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import { available, longestCallCovered, rowOf, type Entry, type WalletState } from '../domain/wallet';
import type { CallOutcome } from '../domain/call';
import type { WalletStore } from '../store/wallet-store';
import type { BillingEvents } from '../usecases/ports';

const { BillingCallEvent, BillingUsageEvent, BillingCreditEvent, CallDirection } = voiceapi.events.v1;

/**
 * Billing's events go out through the outbox, each on the stream of its readers (usage for
 * webhooks, credit for lead ingest, a call's outcome that no end announced for webhooks), with ids
 * derived from what they announce (`usage:<tenant>:<seq>`, `credits:<tenant>:<seq>`,
 * `billed:<call>`): announcing the same thing twice (a retry, the sweeper after a crash) stores
 * or publishes the same event id, which consumers skip. A call's charge and its usage are
 * announced by telephony with the call's end, under these same ids. `outboundPerMinute`: outbound
 * calls' rate, to say which calls the credit left covers.
 */
export function billingEvents(outbox: Outbox, store: WalletStore, outboundPerMinute: number): BillingEvents {
  // The outbox stores what is added while a write is under way together (one insert for many).
  const put = (records: EventRecord[]) => (records.length === 0 ? Promise.resolve() : outbox.addOnce(records));
  const events: BillingEvents = {
    /**
     * CreditsUsage for each debit row appended, and the credit available after the last entry
     * (CreditsAvailable) when the calls it covers changed since `before` (the wallet before the
     * entries; unknown: announced). Readers only judge which calls the credit covers, so a change
     * that leaves that alone (a rich wallet's calls) is not news. The caller notes how far the
     * chain is announced.
     */
    async ledgerEntries(scope: TenantScope, entries: readonly Entry[], before?: WalletState): Promise<void> {
      if (entries.length === 0) return;
      const { tenantId } = scope;
      const at = new Date();
      const records: EventRecord[] = [];
      for (const e of entries) {
        const row = rowOf(e.change, e.state, e.state.updatedAt ?? at);
        // A call's charge is announced with the call's end (telephony settles it and carries it).
        if (!row || row.amount >= 0 || row.type === 'call_deduction') continue;
        const usage = {
          tenantId,
          transactionId: row.id,
          type: row.type,
          credits: -row.amount,
          balanceAfter: row.balanceAfter,
          reference: row.reference,
          ...(row.callId !== undefined && { callId: row.callId }),
          ...(row.call && {
            direction:
              row.call.direction === 'outbound'
                ? CallDirection.CALL_DIRECTION_OUTBOUND
                : CallDirection.CALL_DIRECTION_INBOUND,
            ...(row.call.contactId && { contactId: row.call.contactId }),
            ...(row.call.campaignId && { campaignId: row.call.campaignId }),
            ...(row.call.agentId && { agentId: row.call.agentId }),
          }),
        };
        records.push(
          eventRecord(
            BillingUsageEvent,
            tenantId,
            BillingUsageEvent.fromPartial({
              occurTime: row.createdAt,
              event: { $case: 'creditsUsage', creditsUsage: usage },
            }),
            `usage:${tenantId}:${row.seq}`,
          ),
        );
      }
      const last = entries[entries.length - 1]!.state;
      const covered = (s: WalletState) => longestCallCovered(available(s), outboundPerMinute);
      if (before && covered(before) === covered(last)) return put(records);
      const credit = {
        tenantId,
        seq: last.seq,
        available: available(last),
        longestOutboundCallSeconds: longestCallCovered(available(last), outboundPerMinute),
      };
      records.push(
        eventRecord(
          BillingCreditEvent,
          tenantId,
          BillingCreditEvent.fromPartial({
            occurTime: last.updatedAt ?? at,
            event: { $case: 'creditsAvailable', creditsAvailable: credit },
          }),
          `credits:${tenantId}:${last.seq}`,
        ),
      );
      await put(records);
    },

    /** Announces entries the live path did not (the sweeper), then moves the cursor past them. */
    async catchUp(scope: TenantScope, from: number, to: number): Promise<void> {
      await events.ledgerEntries(scope, await store.entriesBetween(scope, from + 1, to));
      await store.noteAnnounced(scope, from, to);
    },

    /** The outcome of a call whose end never came (its hold expired): no end announces it. */
    async outcome(o: CallOutcome): Promise<void> {
      const billed = {
        callId: o.callId,
        tenantId: o.tenantId,
        direction:
          o.direction === 'outbound' ? CallDirection.CALL_DIRECTION_OUTBOUND : CallDirection.CALL_DIRECTION_INBOUND,
        billingStatus: o.status,
        creditsCharged: o.creditsCharged,
        ...(o.creditsError !== undefined && { creditsError: o.creditsError }),
        ...(o.balanceAfter !== undefined && { balanceAfter: o.balanceAfter }),
        ...(o.transactionId !== undefined && { transactionId: o.transactionId }),
        sandbox: o.sandbox,
        endTime: o.endedAt,
        durationSeconds: o.durationSeconds,
        ...(o.contactId && { contactId: o.contactId }),
        ...(o.campaignId && { campaignId: o.campaignId }),
        ...(o.agentId && { agentId: o.agentId }),
        ...(o.fromNumber && { fromNumber: o.fromNumber }),
      };
      await put([
        eventRecord(
          BillingCallEvent,
          o.tenantId,
          BillingCallEvent.fromPartial({ occurTime: o.billedAt, event: { $case: 'callBilled', callBilled: billed } }),
          `billed:${o.callId}`,
        ),
      ]);
    },
  };
  return events;
}
