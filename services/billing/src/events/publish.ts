import { eventRecord, type EventRecord, type Outbox } from '@voiceapi/kit/events';
import { type TenantScope } from '@voiceapi/kit/grpc';
import { voiceapi } from '@voiceapi/proto';
import { available, longestCallCovered, rowOf, type Entry, type WalletState } from '../domain/wallet';
import type { CallOutcome } from '../domain/call';
import type { WalletStore } from '../store/wallet-store';
import type { BillingEvents } from '../usecases/ports';

const { BillingCallEvent, BillingUsageEvent, BillingCreditEvent, CallDirection } = voiceapi.events.v1;

/**
 * Billing's events via the outbox, with ids derived from what they announce (`usage:<tenant>:<seq>`, ...), so a
 * repeat (a retry, the sweeper after a crash) has the same id and consumers skip it. Telephony announces a call's
 * charge with its end, under the same ids.
 */
export function billingEvents(outbox: Outbox, store: WalletStore, outboundPerMinute: number): BillingEvents {
  const put = (records: EventRecord[]) => (records.length === 0 ? Promise.resolve() : outbox.addOnce(records));
  const events: BillingEvents = {
    /**
     * CreditsUsage per debit row, and CreditsAvailable only when the calls the credit covers changed since
     * `before`: that is all readers judge.
     */
    async ledgerEntries(scope: TenantScope, entries: readonly Entry[], before?: WalletState): Promise<void> {
      if (entries.length === 0) return;
      const { tenantId } = scope;
      const at = new Date();
      const records: EventRecord[] = [];
      for (const e of entries) {
        const row = rowOf(e.change, e.state, e.state.updatedAt ?? at);
        // Telephony announces a call's charge with its end.
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

    /** For the sweeper: announces entries the live path did not, then moves the cursor. */
    async catchUp(scope: TenantScope, from: number, to: number): Promise<void> {
      await events.ledgerEntries(scope, await store.entriesBetween(scope, from + 1, to));
      await store.noteAnnounced(scope, from, to);
    },

    /** A call whose end never came: no end announces its outcome. */
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
