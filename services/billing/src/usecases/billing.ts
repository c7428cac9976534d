import { isReason, validationError } from '@voiceapi/kit/errors';
import { type TenantScope } from '@voiceapi/kit/grpc';
import { type TypedCounter } from '@voiceapi/kit/metrics';
import type { RateCard } from '../config';
import {
  available,
  callCharge,
  longestCallCovered,
  MAX_CALL_SECONDS,
  type Direction,
  type LedgerRow,
  type TransactionType,
  type WalletState,
} from '../domain/wallet';
import { billingReasons } from '../reasons';
import type { WalletStore } from '../store/wallet-store';
import type { WalletResult } from '../domain/wallet-ops';
import type { Wallets } from './wallets';

export const MAX_TOP_UP = 1_000_000_000;
/** Larger than any real debit or hold; keeps sums far inside exact integers. */
const MAX_AMOUNT = 1_000_000_000;
const REFERENCE = /^[\x21-\x7e]{1,300}$/;
export const CALL_ID = /^[A-Za-z0-9_-]{1,64}$/;
const MAX_HOLDS = 500;

export interface BillingMetrics {
  charged: TypedCounter<{ type: string }>;
}

export interface RowsPage {
  rows: LedgerRow[];
  total: number;
  hasMore: boolean;
}

/** The rules of the billing RPCs, on domain values; the gRPC adapter only translates. */
export class Billing {
  constructor(
    private readonly wallets: Wallets,
    private readonly store: WalletStore,
    readonly rates: RateCard,
    private readonly metrics?: BillingMetrics,
  ) {}

  balance(scope: TenantScope): Promise<WalletState> {
    return this.wallets.read(scope);
  }

  /** Newest first, up to the head read first: the rows and the total agree. */
  async transactions(
    scope: TenantScope,
    opts: { type?: TransactionType; page: number; limit: number },
  ): Promise<RowsPage> {
    const head = await this.wallets.read(scope);
    const total = head.counts[opts.type ?? 'all'] ?? 0;
    const rows = total === 0 ? [] : await this.store.listRows(scope, { ...opts, maxSeq: head.seq });
    return { rows, total, hasMore: opts.page * opts.limit < total };
  }

  topUp(scope: TenantScope, amount: number, reference: string, note?: string): Promise<WalletResult> {
    refuseSandbox(scope);
    wholeAmount('amount', amount, MAX_TOP_UP);
    checkReference(reference);
    return this.wallets.run(scope, { kind: 'topUp', reference, amount, description: note?.trim() || 'Top-up' });
  }

  async debit(
    scope: TenantScope,
    req: { reference: string; amount: number; type: TransactionType; description: string },
  ): Promise<WalletResult> {
    refuseSandbox(scope);
    wholeAmount('amount', req.amount, MAX_AMOUNT);
    checkReference(req.reference);
    if (req.type === 'top_up' || req.type === 'call_deduction') {
      throw validationError(`a debit cannot be of type ${req.type} (calls are charged from their hold)`, [
        { path: 'type', message: 'not a debit type' },
      ]);
    }
    const r = await this.wallets.run(scope, {
      kind: 'debit',
      reference: req.reference,
      amount: req.amount,
      type: req.type,
      description: req.description.trim() || req.type,
    });
    if (!r.replayed) this.metrics?.charged.add(req.amount, { type: req.type });
    return r;
  }

  placeHold(
    scope: TenantScope,
    req: { callId: string; amount: number; direction: Direction; expiresAt: Date },
  ): Promise<WalletResult> {
    refuseSandbox(scope);
    checkCallId(req.callId);
    wholeAmount('amount', req.amount, MAX_AMOUNT);
    if (!(req.expiresAt.getTime() > Date.now()))
      throw validationError('expire_time must be in the future', [{ path: 'expire_time', message: 'in the past' }]);
    return this.wallets.run(scope, { kind: 'hold', ...req });
  }

  /** Prices and places holds together (one append); a call the credit cannot cover is just not placed. */
  async placeCallHolds(
    scope: TenantScope,
    holds: readonly { callId: string; direction: Direction; maxCallSeconds: number; expiresAt: Date }[],
  ): Promise<{ callId: string; placed: boolean; amount: number }[]> {
    refuseSandbox(scope);
    if (holds.length < 1 || holds.length > MAX_HOLDS)
      throw validationError(`1 to ${MAX_HOLDS} holds`, [{ path: 'holds', message: 'out of range' }]);
    const priced = holds.map((h) => {
      checkCallId(h.callId);
      if (!(h.expiresAt.getTime() > Date.now()))
        throw validationError('expire_time must be in the future', [{ path: 'expire_time', message: 'in the past' }]);
      return { ...h, amount: this.holdFor(h.direction, h.maxCallSeconds) };
    });
    return Promise.all(
      priced.map(async ({ callId, direction, expiresAt, amount }) => {
        if (amount <= 0) return { callId, placed: true, amount };
        try {
          await this.wallets.run(scope, { kind: 'hold', callId, amount, direction, expiresAt });
          return { callId, placed: true, amount };
        } catch (err) {
          if (isReason(err, 'insufficient_credits')) return { callId, placed: false, amount };
          throw err;
        }
      }),
    );
  }

  async capture(
    scope: TenantScope,
    req: { callId: string; amount: number; description: string },
  ): Promise<WalletResult> {
    refuseSandbox(scope);
    checkCallId(req.callId);
    wholeAmount('amount', req.amount, MAX_AMOUNT);
    const r = await this.wallets.run(scope, { kind: 'capture', ...req, description: req.description.trim() || 'Call' });
    if (r.row && !r.replayed) this.metrics?.charged.add(-r.row.amount, { type: 'call_deduction' });
    return r;
  }

  /** The call's longest possible cost (decisions file, "Billing semantics"). */
  holdFor(direction: Direction, maxCallSeconds: number): number {
    if (!Number.isSafeInteger(maxCallSeconds) || maxCallSeconds < 1 || maxCallSeconds > MAX_CALL_SECONDS) {
      throw validationError('max_call_seconds must be a whole number from 1 to 86400', [
        { path: 'max_call_seconds', message: 'out of range' },
      ]);
    }
    return callCharge(maxCallSeconds, this.rateOf(direction));
  }

  /** Read-only, any key mode. */
  async quoteCallHold(
    scope: TenantScope,
    direction: Direction,
    maxCallSeconds: number,
  ): Promise<{ amount: number; state: WalletState; covered: boolean; longestCoveredSeconds: number }> {
    const amount = this.holdFor(direction, maxCallSeconds);
    const state = await this.wallets.read(scope);
    return {
      amount,
      state,
      covered: available(state) >= amount,
      longestCoveredSeconds: longestCallCovered(available(state), this.rateOf(direction)),
    };
  }

  private rateOf(direction: Direction): number {
    return direction === 'outbound' ? this.rates.outboundPerMinute : this.rates.inboundPerMinute;
  }

  release(scope: TenantScope, callId: string): Promise<WalletResult> {
    checkCallId(callId);
    return this.wallets.run(scope, { kind: 'release', callId });
  }
}

function refuseSandbox(scope: TenantScope): void {
  if (scope.mode === 'sandbox')
    throw billingReasons.error(
      'sandbox_not_billable',
      'sandbox keys never spend or add credits; skip the billing call',
    );
}

function wholeAmount(path: string, v: number, max: number): void {
  if (!Number.isSafeInteger(v) || v < 1 || v > max)
    throw validationError(`${path} must be a whole number of credits from 1 to ${max}`, [
      { path, message: 'out of range' },
    ]);
}

function checkReference(ref: string): void {
  if (!REFERENCE.test(ref))
    throw validationError('reference must be 1–300 visible ASCII characters', [
      { path: 'reference', message: 'invalid' },
    ]);
  if (ref.startsWith('call:'))
    throw validationError('references starting with call: are reserved for calls', [
      { path: 'reference', message: 'reserved' },
    ]);
}

function checkCallId(id: string): void {
  if (!CALL_ID.test(id))
    throw validationError('call_id must be 1–64 letters, digits, - or _', [{ path: 'call_id', message: 'invalid' }]);
}
