/**
 * A wallet is a chain of entries (decision 0050). Each entry is one change (a ledger row, or a
 * hold placed or released) together with the whole wallet state after it, and entry n+1 is
 * computed from entry n alone. Appending is one insert whose `_id` is (tenant, n+1): of two
 * writers computing from the same head exactly one can insert, on every supported store, so
 * the state needs no multi-document transaction and is never half-written. This file is the
 * arithmetic; it touches no store.
 */

export const TRANSACTION_TYPES = [
  'top_up',
  'call_deduction',
  'number_purchase',
  'knowledge_upload',
  'adjustment',
] as const;
export type TransactionType = (typeof TRANSACTION_TYPES)[number];
export type Direction = 'outbound' | 'inbound';

export interface Hold {
  callId: string;
  amount: number;
  direction: Direction;
  createdAt: Date;
  expiresAt: Date;
}

/** The wallet after an entry. `held` is the sum of `holds`; `available` = balance − held ≥ 0. */
export interface WalletState {
  seq: number;
  balance: number;
  held: number;
  holds: Hold[];
  /** Ledger rows so far, per type and in all (`all`). */
  counts: Record<string, number>;
  updatedAt?: Date;
}

export const EMPTY_WALLET: WalletState = { seq: 0, balance: 0, held: 0, holds: [], counts: {} };

export const available = (s: WalletState): number => s.balance - s.held;

/** What a call's ledger row says of the call, so a tenant reconciles without another read. */
export interface CallFacts {
  direction: Direction;
  contactId?: string;
  campaignId?: string;
  agentId?: string;
}

/** A ledger row, as the tenant sees it. Debits are negative. */
export interface LedgerRow {
  id: string;
  seq: number;
  type: TransactionType;
  amount: number;
  balanceAfter: number;
  callId?: string;
  call?: CallFacts;
  reference: string;
  description: string;
  createdAt: Date;
}

export type EntryChange =
  | {
      kind: 'ledger';
      rowId: string;
      type: TransactionType;
      amount: number;
      reference: string;
      description: string;
      callId?: string;
      call?: CallFacts;
    }
  | { kind: 'hold'; hold: Hold }
  /** `reference` set: the call is settled for good (its reference is posted, no row). */
  | { kind: 'release'; callId: string; reference?: string; reason?: string };

export interface Entry {
  change: EntryChange;
  state: WalletState;
}

/** The state after one change. Refusals are decided before (see the use cases); this only adds up. */
export function apply(prev: WalletState, change: EntryChange, at: Date): WalletState {
  const seq = prev.seq + 1;
  switch (change.kind) {
    case 'ledger': {
      const releasing = change.callId === undefined ? undefined : prev.holds.find((h) => h.callId === change.callId);
      const holds = releasing ? prev.holds.filter((h) => h !== releasing) : prev.holds;
      return {
        seq,
        balance: prev.balance + change.amount,
        held: prev.held - (releasing?.amount ?? 0),
        holds,
        counts: { ...prev.counts, [change.type]: (prev.counts[change.type] ?? 0) + 1, all: (prev.counts.all ?? 0) + 1 },
        updatedAt: at,
      };
    }
    case 'hold':
      return { ...prev, seq, held: prev.held + change.hold.amount, holds: [...prev.holds, change.hold], updatedAt: at };
    case 'release': {
      const h = prev.holds.find((x) => x.callId === change.callId);
      return {
        ...prev,
        seq,
        held: prev.held - (h?.amount ?? 0),
        holds: prev.holds.filter((x) => x !== h),
        updatedAt: at,
      };
    }
  }
}

/** The reference an entry posts, if any: a ledger row's, or a final release's (`call:<id>`). */
export function postedReference(change: EntryChange): string | undefined {
  return change.kind === 'hold' ? undefined : change.reference;
}

/** The ledger row an entry is, if it is one. */
export function rowOf(change: EntryChange, state: WalletState, createdAt: Date): LedgerRow | undefined {
  if (change.kind !== 'ledger') return undefined;
  return {
    id: change.rowId,
    seq: state.seq,
    type: change.type,
    amount: change.amount,
    balanceAfter: state.balance,
    ...(change.callId !== undefined && { callId: change.callId }),
    ...(change.call !== undefined && { call: change.call }),
    reference: change.reference,
    description: change.description,
    createdAt,
  };
}

/** Credits for a call: each started minute at the direction's rate; 0 s costs nothing. */
export function callCharge(durationSeconds: number, ratePerMinute: number): number {
  if (durationSeconds <= 0) return 0;
  return Math.ceil(durationSeconds / 60) * ratePerMinute;
}

/** The longest call allowed (a hold's ceiling). */
export const MAX_CALL_SECONDS = 86_400;

/** The longest call whose hold (`callCharge` of its length) `credit` covers, in seconds (0: none). */
export function longestCallCovered(credit: number, ratePerMinute: number): number {
  if (ratePerMinute <= 0) return MAX_CALL_SECONDS;
  return Math.min(MAX_CALL_SECONDS, Math.max(0, Math.floor(credit / ratePerMinute)) * 60);
}

/** Checks the invariants of one state; the tests run it after every scenario. */
export function stateProblems(s: WalletState): string[] {
  const problems: string[] = [];
  const held = s.holds.reduce((n, h) => n + h.amount, 0);
  if (held !== s.held) problems.push(`held ${s.held} is not the sum of the holds (${held})`);
  if (s.balance < 0) problems.push(`balance ${s.balance} is below zero`);
  if (available(s) < 0) problems.push(`available ${available(s)} is below zero`);
  if (!Number.isSafeInteger(s.balance)) problems.push(`balance ${s.balance} is not a whole number`);
  return problems;
}
