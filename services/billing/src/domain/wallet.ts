/**
 * A wallet is a chain of entries (decision 0050): one change plus the figures after it. Entries have a fixed size;
 * open holds are hold entries no later entry closed (decision 0137). Pure arithmetic; no store here.
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

/** The wallet after an entry. `held` is the sum of the open holds; `available` = balance − held ≥ 0. */
export interface WalletState {
  seq: number;
  balance: number;
  held: number;
  /** Absent or stale in entries billing 1.2 wrote (use `holds.length`). */
  openHolds?: number;
  /** Every open hold, written by billing 1.2 and the `compat` format only (decision 0137). */
  holds?: Hold[];
  /** The last entry that listed `holds`: look-ups read the chain after it (1.2 named calls only in `change`). */
  listedUpTo?: number;
  /** Ledger rows so far, per type and in all (`all`). */
  counts: Record<string, number>;
  updatedAt?: Date;
}

export const EMPTY_WALLET: WalletState = { seq: 0, balance: 0, held: 0, openHolds: 0, counts: {} };

export const available = (s: WalletState): number => s.balance - s.held;

/** A list wins over the count: billing 1.2 copies the count, which it does not know, unchanged. */
export const openHoldCount = (s: WalletState): number => s.holds?.length ?? s.openHolds ?? 0;

/** Decision 0137: `compat` keeps the open-hold list billing 1.2 reads, while 1.2 may append or be rolled back to. */
export type EntryFormat = 'fixed' | 'compat';

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
      /** A call's row: the credits of the hold it closed (0 or absent: none was open). */
      released?: number;
    }
  | { kind: 'hold'; hold: Hold }
  /** `reference` set: settled for good without a row. `released` is absent in entries billing 1.2 wrote. */
  | { kind: 'release'; callId: string; reference?: string; reason?: string; released?: number };

export interface Entry {
  change: EntryChange;
  state: WalletState;
}

/** The state after one change; refusals are decided before. The hold list carries on only in `compat`. */
export function apply(prev: WalletState, change: EntryChange, at: Date, format: EntryFormat = 'fixed'): WalletState {
  const seq = prev.seq + 1;
  const closes = change.kind === 'hold' || change.released === undefined ? undefined : change.callId;
  const released = change.kind === 'hold' ? 0 : (change.released ?? 0);
  const list = format === 'compat' ? (prev.holds ?? (prev.seq === 0 ? [] : undefined)) : undefined;
  const holds =
    list === undefined
      ? undefined
      : change.kind === 'hold'
        ? [...list, change.hold]
        : closes !== undefined
          ? list.filter((h) => h.callId !== closes)
          : list;
  const opened = change.kind === 'hold' ? 1 : closes !== undefined ? -1 : 0;
  const next: WalletState = {
    seq,
    balance: prev.balance + (change.kind === 'ledger' ? change.amount : 0),
    held: prev.held + (change.kind === 'hold' ? change.hold.amount : -released),
    openHolds: openHoldCount(prev) + opened,
    counts:
      change.kind === 'ledger'
        ? { ...prev.counts, [change.type]: (prev.counts[change.type] ?? 0) + 1, all: (prev.counts.all ?? 0) + 1 }
        : prev.counts,
    updatedAt: at,
    ...(holds !== undefined && { holds }),
  };
  // A fixed-size entry after one that listed holds names it, and so does every one after it.
  const listedUpTo = prev.holds !== undefined && prev.seq > 0 ? prev.seq : prev.listedUpTo;
  if (listedUpTo !== undefined && holds === undefined) next.listedUpTo = listedUpTo;
  return next;
}

/** The reference an entry posts, if any: a ledger row's, or a final release's (`call:<id>`). */
export function postedReference(change: EntryChange): string | undefined {
  return change.kind === 'hold' ? undefined : change.reference;
}

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

export const MAX_CALL_SECONDS = 86_400;

/** The longest call whose hold (`callCharge` of its length) `credit` covers, in seconds (0: none). */
export function longestCallCovered(credit: number, ratePerMinute: number): number {
  if (ratePerMinute <= 0) return MAX_CALL_SECONDS;
  return Math.min(MAX_CALL_SECONDS, Math.max(0, Math.floor(credit / ratePerMinute)) * 60);
}
