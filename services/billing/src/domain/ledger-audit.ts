/**
 * The ledger audit's arithmetic (decision 0050: a wallet's balance is what its ledger rows sum to,
 * at every entry of its chain). The audit checks each wallet's chain once, from where it last
 * stopped: the rows of the entries since then are added to what the rows before summed to, and
 * the total is compared with the balance the newest checked entry carries. A wallet found
 * unbalanced stays so until its entries are corrected (a posted adjustment moves both sides, so
 * only a fix of the wrong entry, and the wallet's mark removed, clears it).
 */

/** How far the audit has checked a wallet's chain, and what it found there. */
export interface AuditMark {
  /** The chain is checked up to this entry. */
  seq: number;
  /** What the ledger rows up to `seq` sum to. */
  rowsSum: number;
  /** The balance the entry at `seq` carries. */
  balance: number;
  /** `balance` is not `rowsSum`: money is wrong. */
  unbalanced: boolean;
}

/** The mark after checking the entries after `prev` (none: from the first) up to `seq`, whose rows sum to `rowsSum`; `balance` is the entry at `seq`'s. */
export function audited(prev: AuditMark | undefined, seq: number, rowsSum: number, balance: number): AuditMark {
  const sum = (prev?.rowsSum ?? 0) + rowsSum;
  return { seq, rowsSum: sum, balance, unbalanced: sum !== balance };
}
