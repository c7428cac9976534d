/**
 * The ledger audit's arithmetic: a balance is what the ledger rows sum to, at every entry (decision 0050).
 * A wallet found wrong stays unbalanced until the entry is fixed and its mark removed: a later right balance
 * does not undo what a tenant saw.
 */

export interface RowFigures {
  seq: number;
  amount: number;
  balanceAfter: number;
}

/** How far the audit has checked a wallet's chain, and what it found there. */
export interface AuditMark {
  seq: number;
  rowsSum: number;
  balance: number;
  unbalanced: boolean;
  /** The first entry found unbalanced. */
  wrongAt?: number;
}

export interface Tally {
  rowsSum: number;
  wrongAt?: number;
}

/** No mark: from the first entry. */
export const tallyOf = (mark: AuditMark | undefined): Tally => ({
  rowsSum: mark?.rowsSum ?? 0,
  ...(mark?.wrongAt !== undefined && { wrongAt: mark.wrongAt }),
});

/** The check after the chain's next rows, in order. */
export function tally(t: Tally, rows: readonly RowFigures[]): Tally {
  let { rowsSum, wrongAt } = t;
  for (const r of rows) {
    rowsSum += r.amount;
    if (wrongAt === undefined && r.balanceAfter !== rowsSum) wrongAt = r.seq;
  }
  return { rowsSum, ...(wrongAt !== undefined && { wrongAt }) };
}

/** `balance`: what the entry at `seq` carries. */
export function markOf(t: Tally, seq: number, balance: number): AuditMark {
  const wrongAt = t.wrongAt ?? (balance !== t.rowsSum ? seq : undefined);
  return {
    seq,
    rowsSum: t.rowsSum,
    balance,
    unbalanced: wrongAt !== undefined,
    ...(wrongAt !== undefined && { wrongAt }),
  };
}
