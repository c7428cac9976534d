import { validationError } from '@voiceapi/kit/errors';
import { scopeOfRecord, type TenantScope } from '@voiceapi/kit/grpc';
import { type TypedCounter, type TypedHistogram } from '@voiceapi/kit/metrics';
import { type Logger } from '@voiceapi/kit/service';
import type { RateCard } from '../config';
import { callCharge } from '../domain/wallet';
import type { CallStore } from '../store/call-store';
import type { CallOutcome, EndedCall } from '../domain/call';
import type { Wallets } from './wallets';
import type { OutcomeAnnouncer } from './ports';
import { CALL_ID } from './billing';

const MAX_SETTLED = 500;

export interface CallMetrics {
  billed: TypedCounter<{ outcome: string; direction: string }>;
  /** The same instrument as the debit RPCs' `credits_charged`. */
  credits: TypedCounter<{ type: string }>;
  /** From the call's end to its outcome, in seconds. */
  settleDelay: TypedHistogram<{ outcome: string }>;
}

/**
 * Charges ended calls, one outcome per call whatever the order or repeats: `call:<id>` is posted once, by a
 * ledger row or a final release, and that entry is the outcome, kept nowhere else.
 */
export class CallCharging {
  constructor(
    private readonly wallets: Wallets,
    private readonly calls: CallStore,
    private readonly rates: RateCard,
    private readonly announce: OutcomeAnnouncer,
    private readonly log: Logger,
    private readonly metrics?: CallMetrics,
  ) {}

  async settle(call: EndedCall): Promise<CallOutcome> {
    try {
      // No read first: for a call settled before, the wallet op replays the charge that stands.
      const { outcome, replayed } = await this.decide(call);
      if (!replayed) {
        this.metrics?.billed.add(1, { outcome: outcome.status, direction: outcome.direction });
        if (outcome.creditsCharged > 0) this.metrics?.credits.add(outcome.creditsCharged, { type: 'call_deduction' });
        this.metrics?.settleDelay.record(Math.max(0, outcome.billedAt.getTime() - outcome.endedAt.getTime()) / 1000, {
          outcome: outcome.status,
        });
      }
      // Telephony announces what it settles; an end never reported is announced here (repeats share the event id).
      if (call.expired) await this.announce(outcome);
      return outcome;
    } catch (err) {
      // Telephony retries; remembered too, so the sweeper settles it meanwhile.
      await this.calls
        .remember(scopeOf(call), call)
        .catch((rememberErr: unknown) =>
          this.log.warn(
            { err: rememberErr, callId: call.callId },
            'could not remember the failed call; Kafka redelivers it',
          ),
        );
      throw err;
    }
  }

  /** One tenant's ended calls, outcomes in order; the wallet appends them together. */
  async settleEnded(
    scope: TenantScope,
    calls: readonly Omit<EndedCall, 'tenantId' | 'sandbox' | 'free'>[],
  ): Promise<CallOutcome[]> {
    if (calls.length < 1 || calls.length > MAX_SETTLED)
      throw validationError(`1 to ${MAX_SETTLED} calls`, [{ path: 'calls', message: 'out of range' }]);
    const problems = calls.flatMap((c, i) =>
      !CALL_ID.test(c.callId) ||
      !Number.isInteger(c.durationSeconds) ||
      c.durationSeconds < 0 ||
      c.durationSeconds > 86_400
        ? [{ path: `calls[${i}]`, message: 'a call id, and a duration of 0 to 86,400 s' }]
        : [],
    );
    if (problems.length > 0) throw validationError('invalid ended calls', problems);
    // In the asking tenant's wallet only: another tenant's call of the same id is never answered.
    return Promise.all(
      calls.map((c) => this.settle({ ...c, tenantId: scope.tenantId, sandbox: scope.mode === 'sandbox', free: false })),
    );
  }

  /** A call that never reported its end: its hold released, settled without a charge. */
  async expire(
    scope: TenantScope,
    callId: string,
    direction: EndedCall['direction'],
    expiredAt: Date,
  ): Promise<CallOutcome> {
    return this.settle({
      callId,
      tenantId: scope.tenantId,
      direction,
      durationSeconds: 0,
      sandbox: false,
      free: false,
      holdFailed: false,
      endedAt: expiredAt,
      expired: true,
    });
  }

  /** The call's outcome, from the entry that posts `call:<id>`: made now, or (`replayed`) made before. */
  private async decide(call: EndedCall): Promise<{ outcome: CallOutcome; replayed: boolean }> {
    const base = {
      callId: call.callId,
      tenantId: call.tenantId,
      direction: call.direction,
      sandbox: call.sandbox,
      durationSeconds: call.durationSeconds,
      endedAt: call.endedAt,
      billedAt: new Date(),
      ...facts(call),
      ...(call.fromNumber && { fromNumber: call.fromNumber }),
    };
    const charge = callCharge(
      call.durationSeconds,
      call.direction === 'outbound' ? this.rates.outboundPerMinute : this.rates.inboundPerMinute,
    );
    const noCharge = call.expired || call.sandbox || call.free || charge === 0 || call.holdFailed;
    if (noCharge) {
      // Settles for good (a later charge is refused); if charged meanwhile, that charge is the outcome.
      const failed = call.expired
        ? 'end_not_reported'
        : call.holdFailed && !call.sandbox && !call.free && charge > 0
          ? 'insufficient_credits'
          : undefined;
      const r = await this.wallets.run(scopeOf(call), {
        kind: 'release',
        callId: call.callId,
        final: true,
        reason: failed ?? 'skipped',
      });
      const replayed = r.replayed;
      if (r.row) return { replayed, outcome: { ...base, ...charged(r.row) } };
      if (failed) return { replayed, outcome: { ...base, status: 'failed', creditsCharged: 0, creditsError: failed } };
      return { replayed, outcome: { ...base, status: 'skipped', creditsCharged: 0 } };
    }
    const minutes = Math.ceil(call.durationSeconds / 60);
    const r = await this.wallets.run(scopeOf(call), {
      kind: 'capture',
      callId: call.callId,
      amount: charge,
      description: `${call.direction === 'outbound' ? 'Outbound' : 'Inbound'} call, ${minutes} min`,
      call: { direction: call.direction, ...facts(call) },
    });
    const { replayed } = r;
    if (r.row) {
      const short = (r.shortfall ?? 0) > 0;
      return {
        replayed,
        outcome: { ...base, ...charged(r.row), ...(short && { creditsError: 'insufficient_credits' }) },
      };
    }
    // Settled before without a charge (its end not reported, or skipped), or nothing to take now.
    if (r.settledWithoutCharge === 'skipped')
      return { replayed, outcome: { ...base, status: 'skipped', creditsCharged: 0 } };
    return {
      replayed,
      outcome: {
        ...base,
        status: 'failed',
        creditsCharged: 0,
        creditsError: r.settledWithoutCharge ?? 'insufficient_credits',
      },
    };
  }
}

const charged = (row: { amount: number; balanceAfter: number; id: string; seq: number }) => ({
  status: 'charged' as const,
  creditsCharged: -row.amount,
  balanceAfter: row.balanceAfter,
  transactionId: row.id,
  ledgerSeq: row.seq,
});

const facts = (call: EndedCall): Pick<EndedCall, 'contactId' | 'campaignId' | 'agentId'> => ({
  ...(call.contactId && { contactId: call.contactId }),
  ...(call.campaignId && { campaignId: call.campaignId }),
  ...(call.agentId && { agentId: call.agentId }),
});

const scopeOf = (call: EndedCall): TenantScope => scopeOfRecord(call.tenantId, call.sandbox ? 'sandbox' : 'live');
