import { Types } from 'mongoose';
import { billingReasons } from '../reasons';
import {
  apply,
  available,
  postedReference,
  rowOf,
  type CallFacts,
  type Direction,
  type Entry,
  type EntryChange,
  type EntryFormat,
  type Hold,
  type LedgerRow,
  type TransactionType,
  type WalletState,
} from './wallet';

// What each wallet op decides against a head, pure; batching and appending are in usecases/wallets.ts.

export type WalletOp =
  | { kind: 'topUp'; reference: string; amount: number; description: string }
  | {
      kind: 'debit';
      reference: string;
      amount: number;
      type: Exclude<TransactionType, 'top_up' | 'call_deduction'>;
      description: string;
    }
  | { kind: 'hold'; callId: string; amount: number; direction: Direction; expiresAt: Date }
  | { kind: 'capture'; callId: string; amount: number; description: string; call?: CallFacts }
  /** `final`: the call is settled without a charge; a later capture of it charges nothing. */
  | { kind: 'release'; callId: string; final?: boolean; reason?: string };

export interface WalletResult {
  /** Right after this op (or as read, for a replay or a no-op). */
  state: WalletState;
  /** For a replay, the original row. */
  row?: LedgerRow;
  replayed: boolean;
  hold?: Hold;
  /** `release`: whether a hold was open. */
  released?: boolean;
  /** `capture`: credits the wallet could not cover (0 when fully charged). */
  shortfall?: number;
  /** Why the call was settled before without a charge (a final release); nothing is charged now. */
  settledWithoutCharge?: string;
}

export const callReference = (callId: string) => `call:${callId}`;

export type Decision =
  | { entry: number; result: Omit<WalletResult, 'state'> }
  | { replaySeq: number; op: WalletOp }
  | { done: Omit<WalletResult, 'state'> }
  | { error: Error };

export function withRow(e: Entry, at: Date): { row?: LedgerRow } {
  const row = rowOf(e.change, e.state, at);
  return row ? { row } : {};
}

/** The reference an op posts, if any (a call's is `call:<id>`). */
export function referenceOf(op: WalletOp): string | undefined {
  switch (op.kind) {
    case 'topUp':
    case 'debit':
      return op.reference;
    case 'hold':
    case 'capture':
      return callReference(op.callId);
    case 'release':
      return op.final ? callReference(op.callId) : undefined;
  }
}

/** The row a replayed op must match (amount unset: a capture may have been capped). */
function expectedRow(op: WalletOp): { type: TransactionType; amount?: number } | undefined {
  switch (op.kind) {
    case 'topUp':
      return { type: 'top_up', amount: op.amount };
    case 'debit':
      return { type: op.type, amount: -op.amount };
    case 'capture':
      return { type: 'call_deduction' };
    default:
      return undefined;
  }
}

/** Read after the head (decision 0050): posted references and the calls' open holds (decision 0137). */
export interface ChainFacts {
  posted: ReadonlyMap<string, number>;
  open: ReadonlyMap<string, Hold>;
}

export const callIdOf = (op: WalletOp): string | undefined =>
  op.kind === 'hold' || op.kind === 'capture' || op.kind === 'release' ? op.callId : undefined;

/** Decides every op in order against the head, adding what this plan's own entries post, place and close. */
export function plan(
  head: WalletState,
  ops: readonly WalletOp[],
  chain: ChainFacts,
  at: Date,
  format: EntryFormat = 'fixed',
): { entries: Entry[]; decisions: Decision[] } {
  const draft = new Draft(head, chain, at, format);
  const decisions = ops.map((op) => decide(draft, op));
  return { entries: draft.entries, decisions };
}

/** A plan being made: the wallet as its entries so far leave it, what they posted, and the holds left open. */
class Draft {
  readonly entries: Entry[] = [];
  readonly open: Map<string, Hold>;
  private readonly postedNow = new Map<string, number>();

  constructor(
    public state: WalletState,
    private readonly chain: ChainFacts,
    readonly at: Date,
    private readonly format: EntryFormat,
  ) {
    this.open = new Map(chain.open);
  }

  /** Appends an entry; its index. */
  add(change: EntryChange): number {
    this.state = apply(this.state, change, this.at, this.format);
    this.entries.push({ change, state: this.state });
    const ref = postedReference(change);
    if (ref !== undefined) this.postedNow.set(ref, this.state.seq);
    if (change.kind === 'hold') this.open.set(change.hold.callId, change.hold);
    else if (change.callId !== undefined) this.open.delete(change.callId);
    return this.entries.length - 1;
  }

  /** The seq that posted a reference: before this plan, or by one of its entries. */
  posted(ref: string): number | undefined {
    return this.chain.posted.get(ref) ?? this.postedNow.get(ref);
  }

  insufficient(need: number): Error {
    return billingReasons.error(
      'insufficient_credits',
      `the available balance (${available(this.state)} credits) cannot cover ${need} credits`,
    );
  }
}

/** One op against the draft: a repeat of a posted reference is a replay, but a hold's own repeat is its open hold. */
function decide(draft: Draft, op: WalletOp): Decision {
  const ref = referenceOf(op);
  const seq = ref === undefined ? undefined : draft.posted(ref);
  if (op.kind === 'hold') return hold(draft, op, seq);
  if (seq !== undefined) return { replaySeq: seq, op };
  switch (op.kind) {
    case 'topUp':
    case 'debit':
      return post(draft, op);
    case 'capture':
      return capture(draft, op);
    case 'release':
      return release(draft, op);
  }
}

/** A top-up, or a debit the available balance covers: one ledger row. */
function post(draft: Draft, op: Extract<WalletOp, { kind: 'topUp' | 'debit' }>): Decision {
  if (op.kind === 'debit' && available(draft.state) < op.amount) return { error: draft.insufficient(op.amount) };
  return {
    entry: draft.add({
      kind: 'ledger',
      rowId: newRowId(),
      type: op.kind === 'topUp' ? 'top_up' : op.type,
      amount: op.kind === 'topUp' ? op.amount : -op.amount,
      reference: op.reference,
      description: op.description,
    }),
    result: { replayed: false },
  };
}

/** The call's open hold answers a repeat (of the same amount); else a new hold, if the balance covers it. */
function hold(draft: Draft, op: Extract<WalletOp, { kind: 'hold' }>, seq: number | undefined): Decision {
  const held = draft.open.get(op.callId);
  if (held) {
    if (held.amount !== op.amount)
      return {
        error: billingReasons.error('reference_conflict', `call ${op.callId} already holds ${held.amount} credits`),
      };
    return { done: { replayed: true, hold: held } };
  }
  if (seq !== undefined) return { replaySeq: seq, op };
  if (available(draft.state) < op.amount) return { error: draft.insufficient(op.amount) };
  const { callId, amount, direction, expiresAt } = op;
  const placed: Hold = { callId, amount, direction, createdAt: draft.at, expiresAt };
  return { entry: draft.add({ kind: 'hold', hold: placed }), result: { replayed: false, hold: placed } };
}

function capture(draft: Draft, op: Extract<WalletOp, { kind: 'capture' }>): Decision {
  const held = draft.open.get(op.callId);
  const released = held?.amount ?? 0;
  // Never below zero: the hold first, then what is available; the rest is a shortfall.
  const charge = Math.min(op.amount, available(draft.state) + released);
  if (charge <= 0) {
    // Settled for good anyway, so a retry after a top-up cannot charge a call billed as failed.
    const settled: EntryChange = {
      kind: 'release',
      callId: op.callId,
      reference: callReference(op.callId),
      reason: 'insufficient_credits',
      ...(held && { released }),
    };
    return {
      entry: draft.add(settled),
      result: { replayed: false, shortfall: op.amount, released: held !== undefined },
    };
  }
  const change: EntryChange = {
    kind: 'ledger',
    rowId: newRowId(),
    type: 'call_deduction',
    amount: -charge,
    reference: callReference(op.callId),
    description: op.description,
    callId: op.callId,
    ...(op.call && { call: op.call }),
    ...(held && { released }),
  };
  return {
    entry: draft.add(change),
    result: { replayed: false, shortfall: op.amount - charge, released: held !== undefined },
  };
}

/** A final release settles the call (posting its reference); another lets go of its hold, if it has one. */
function release(draft: Draft, op: Extract<WalletOp, { kind: 'release' }>): Decision {
  const held = draft.open.get(op.callId);
  if (op.final) {
    const settled: EntryChange = {
      kind: 'release',
      callId: op.callId,
      reference: callReference(op.callId),
      ...(op.reason !== undefined && { reason: op.reason }),
      ...(held && { released: held.amount }),
    };
    return { entry: draft.add(settled), result: { replayed: false, released: held !== undefined } };
  }
  if (!held) return { done: { replayed: false, released: false } };
  return {
    entry: draft.add({ kind: 'release', callId: op.callId, released: held.amount }),
    result: { replayed: false, released: true },
  };
}

const newRowId = () => new Types.ObjectId().toHexString();

/** A replay's answer from what its reference posted: a ledger row it must match, or a final release's reason. */
export function replayResult(
  op: WalletOp,
  posted: { row: LedgerRow } | { releaseReason: string },
  state: WalletState,
): WalletResult {
  if (!('row' in posted)) {
    if (op.kind !== 'capture' && op.kind !== 'release') {
      throw billingReasons.error(
        'reference_conflict',
        `reference ${referenceOf(op)} names a call settled without a charge`,
      );
    }
    return {
      state,
      replayed: true,
      settledWithoutCharge: posted.releaseReason,
      ...(op.kind === 'capture' && { shortfall: 0 }),
      ...(op.kind === 'release' && { released: false }),
    };
  }
  const { row } = posted;
  const wanted = expectedRow(op);
  if (wanted && (wanted.type !== row.type || (wanted.amount !== undefined && wanted.amount !== row.amount))) {
    throw billingReasons.error(
      'reference_conflict',
      `reference ${row.reference} was posted before with another amount or type (${row.type} ${row.amount})`,
    );
  }
  if (op.kind === 'hold')
    throw billingReasons.error('reference_conflict', `call ${op.callId} has been charged already`);
  return {
    state,
    row,
    replayed: true,
    // A repeat of a capture says what the first fell short by (the row is what it could take).
    ...(op.kind === 'capture' && { shortfall: Math.max(0, op.amount + row.amount) }),
    ...(op.kind === 'release' && { released: false }),
  };
}
