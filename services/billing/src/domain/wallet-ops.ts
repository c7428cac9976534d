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
  let state = head;
  const entries: Entry[] = [];
  const postedNow = new Map<string, number>();
  const open = new Map(chain.open);
  const add = (change: EntryChange): number => {
    state = apply(state, change, at, format);
    entries.push({ change, state });
    const ref = postedReference(change);
    if (ref !== undefined) postedNow.set(ref, state.seq);
    if (change.kind === 'hold') open.set(change.hold.callId, change.hold);
    else if (change.callId !== undefined) open.delete(change.callId);
    return entries.length - 1;
  };
  const postedBefore = chain.posted;
  const posted = (ref: string): number | undefined => postedBefore.get(ref) ?? postedNow.get(ref);
  const insufficient = (need: number) =>
    billingReasons.error(
      'insufficient_credits',
      `the available balance (${available(state)} credits) cannot cover ${need} credits`,
    );

  const decisions = ops.map((op): Decision => {
    const ref = referenceOf(op);
    const seq = ref === undefined ? undefined : posted(ref);
    switch (op.kind) {
      case 'topUp':
        if (seq !== undefined) return { replaySeq: seq, op };
        return {
          entry: add({
            kind: 'ledger',
            rowId: newRowId(),
            type: 'top_up',
            amount: op.amount,
            reference: op.reference,
            description: op.description,
          }),
          result: { replayed: false },
        };
      case 'debit':
        if (seq !== undefined) return { replaySeq: seq, op };
        if (available(state) < op.amount) return { error: insufficient(op.amount) };
        return {
          entry: add({
            kind: 'ledger',
            rowId: newRowId(),
            type: op.type,
            amount: -op.amount,
            reference: op.reference,
            description: op.description,
          }),
          result: { replayed: false },
        };
      case 'hold': {
        const held = open.get(op.callId);
        if (held) {
          if (held.amount !== op.amount)
            return {
              error: billingReasons.error(
                'reference_conflict',
                `call ${op.callId} already holds ${held.amount} credits`,
              ),
            };
          return { done: { replayed: true, hold: held } };
        }
        if (seq !== undefined) return { replaySeq: seq, op };
        if (available(state) < op.amount) return { error: insufficient(op.amount) };
        const hold: Hold = {
          callId: op.callId,
          amount: op.amount,
          direction: op.direction,
          createdAt: at,
          expiresAt: op.expiresAt,
        };
        return { entry: add({ kind: 'hold', hold }), result: { replayed: false, hold } };
      }
      case 'capture': {
        if (seq !== undefined) return { replaySeq: seq, op };
        const held = open.get(op.callId);
        const released = held?.amount ?? 0;
        // Never below zero: the hold first, then what is available; the rest is a shortfall.
        const charge = Math.min(op.amount, available(state) + released);
        if (charge <= 0) {
          // Settled for good anyway, so a retry after a top-up cannot charge a call billed as failed.
          const release: EntryChange = {
            kind: 'release',
            callId: op.callId,
            reference: ref,
            reason: 'insufficient_credits',
            ...(held && { released }),
          };
          return {
            entry: add(release),
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
          entry: add(change),
          result: { replayed: false, shortfall: op.amount - charge, released: held !== undefined },
        };
      }
      case 'release': {
        if (seq !== undefined) return { replaySeq: seq, op };
        const held = open.get(op.callId);
        if (op.final) {
          const release: EntryChange = {
            kind: 'release',
            callId: op.callId,
            reference: ref,
            ...(op.reason !== undefined && { reason: op.reason }),
            ...(held && { released: held.amount }),
          };
          return { entry: add(release), result: { replayed: false, released: held !== undefined } };
        }
        if (!held) return { done: { replayed: false, released: false } };
        return {
          entry: add({ kind: 'release', callId: op.callId, released: held.amount }),
          result: { replayed: false, released: true },
        };
      }
    }
  });
  return { entries, decisions };
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
