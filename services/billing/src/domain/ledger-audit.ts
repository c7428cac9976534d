/**
 * The ledger audit's arithmetic (decision 0050: a wallet's balance is what its ledger rows sum
 * to, at every entry of its chain). The audit checks each wallet's chain once, from where it last
 * stopped: each new row's balance after it is compared with what the rows up to it sum to, and the
 * newest checked entry's balance with the sum of all of them. A wallet found wrong stays unbalanced
 * (the first entry found wrong is kept): a later entry computed from a right balance does not undo
 * what a tenant saw; only a fix of the wrong entry, and its wallet's mark removed, clears it.
 */

/** What the audit reads of a ledger row. */
export interface RowFigures {
  seq: number;
  amount: number;
  balanceAfter: number;
}

/** How far the audit has checked a wallet's chain, and what it found there. */
export interface AuditMark {
  /** The chain is checked up to this entry. */
  seq: number;
  /** What the ledger rows up to `seq` sum to. */
  rowsSum: number;
  /** The balance the entry at `seq` carries. */
  balance: number;
  /** An entry's balance was found not to be what the rows up to it sum to: money is wrong. */
  unbalanced: boolean;
  /** The first entry found so. */
  wrongAt?: number;
}

/** Where the check of a wallet's chain stands while its new rows are read. */
export interface Tally {
  rowsSum: number;
  wrongAt?: number;
}

/** The check so far of a wallet last marked `mark` (none: its chain from the first entry). */
export const tallyOf = (mark: AuditMark | undefined): Tally => ({
  rowsSum: mark?.rowsSum ?? 0,
  ...(mark?.wrongAt !== undefined && { wrongAt: mark.wrongAt }),
});

/** The check after these rows (the next ones of the chain, in its order). */
export function tally(t: Tally, rows: readonly RowFigures[]): Tally {
  let { rowsSum, wrongAt } = t;
  for (const r of rows) {
    rowsSum += r.amount;
    if (wrongAt === undefined && r.balanceAfter !== rowsSum) wrongAt = r.seq;
  }
  return { rowsSum, ...(wrongAt !== undefined && { wrongAt }) };
}

/** The mark once the rows up to `seq` are tallied: `balance` is the balance the entry at `seq` carries. */
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
