import { scopeOfRecord, type Logger, type PassResult, type TypedCounter } from '@voiceapi/kit';
import { markOf, tally, tallyOf, type AuditMark } from '../domain/ledger-audit';
import type { AuditStore } from '../store/audit-store';
import type { ChangedHead, WalletStore } from '../store/wallet-store';

/** Changed wallets audited in one pass; a full page is followed by another pass at once. */
const PAGE = 500;
/**
 * Each sweep looks this far before the moment the last one began: a head hint is noted up to a
 * second after the appends it stamps (their time, by the appending replica's clock, which may be
 * behind this one's). A wallet seen again is skipped for one read (its mark is at its hint).
 */
const LOOK_BACK_MS = 60_000;

export interface LedgerAuditDeps {
  store: Pick<WalletStore, 'headsChangedSince' | 'entryAt' | 'rowsBetween'>;
  audits: Pick<AuditStore, 'marks' | 'save'>;
  log: Logger;
  now: () => Date;
  /** Wallets audited (their new entries checked). */
  audited?: TypedCounter<Record<string, never>>;
}

/**
 * The ledger audit (its passes run by a worker on one replica at a time, under the sweeper's
 * lease): every wallet whose head moved since the last sweep has its new entries checked: each
 * new ledger row's balance after it against what the rows up to it sum to (the earlier rows'
 * sum kept in the wallet's mark), and the newest checked entry's balance against the sum of all
 * (decision 0050; domain/ledger-audit.ts). The work is the changed wallets' new entries
 * only: a wallet's mark (`wallet_audits`) says how far it was checked. An unbalanced wallet is
 * logged at error level each time it is audited, and counted by the metric
 * `voiceapi.billing.ledger.unbalanced_wallets` (from the marks).
 *
 * Changed wallets are found by their head hints (`wallet_heads.updatedAt`): entries appended
 * after a wallet's last noted hint are checked once a hint notes them (within a second of their
 * append, unless the appending process died first or forgot the wallet: then at its next change).
 * A process's first sweep looks at every wallet's hint.
 */
export class LedgerAudit {
  /** The sweep under way: the hints noted from `since` on are still to be looked at. */
  private sweep: { since: Date; startedAt: Date; failed: boolean } | undefined;
  /** Where the next sweep begins (none yet: the first sweep looks at every hint). */
  private nextSince: Date | undefined;

  constructor(private readonly d: LedgerAuditDeps) {}

  /** One page of changed wallets; `more` while the sweep has pages left. */
  async pass(): Promise<PassResult> {
    const sweep = (this.sweep ??= { since: this.nextSince ?? new Date(0), startedAt: this.d.now(), failed: false });
    const heads = await this.d.store.headsChangedSince(sweep.since, PAGE);
    const marks = await this.d.audits.marks(heads.map((h) => h.tenantId));
    const checked: { tenantId: string; mark: AuditMark }[] = [];
    for (const head of heads) {
      const mark = marks.get(head.tenantId);
      if (mark && head.seq <= mark.seq) continue;
      try {
        checked.push({ tenantId: head.tenantId, mark: await this.audit(head, mark) });
      } catch (err) {
        // Looked at again by the next sweep, which begins where this one did.
        sweep.failed = true;
        this.d.log.warn({ err, tenantId: head.tenantId }, 'could not audit a wallet yet');
      }
    }
    await this.d.audits.save(checked, this.d.now());
    this.d.audited?.add(checked.length, {});
    if (heads.length === PAGE) {
      const last = heads[heads.length - 1]!.updatedAt;
      // A page all noted at one moment: the next one starts just after it (wallets sharing it beyond the page wait for their next change).
      sweep.since = last.getTime() > sweep.since.getTime() ? last : new Date(sweep.since.getTime() + 1);
      return 'more';
    }
    this.sweep = undefined;
    if (!sweep.failed) this.nextSince = new Date(sweep.startedAt.getTime() - LOOK_BACK_MS);
    return 'done';
  }

  /** The wallet's entries after its mark up to its hint, checked: its new mark. */
  private async audit(head: ChangedHead, mark: AuditMark | undefined): Promise<AuditMark> {
    const scope = scopeOfRecord(head.tenantId);
    const entry = await this.d.store.entryAt(scope, head.seq);
    if (!entry) throw new Error(`the head hint names entry ${head.seq}, which is not in the chain`);
    let t = tallyOf(mark);
    for await (const rows of this.d.store.rowsBetween(scope, mark?.seq ?? 0, head.seq)) t = tally(t, rows);
    const next = markOf(t, head.seq, entry.state.balance);
    if (next.unbalanced) {
      this.d.log.error(
        {
          tenantId: head.tenantId,
          wrongAt: next.wrongAt,
          seq: next.seq,
          balance: next.balance,
          rowsSum: next.rowsSum,
          difference: next.balance - next.rowsSum,
          foundBefore: mark?.unbalanced === true,
        },
        "a wallet's balance is not what its ledger rows sum to",
      );
    }
    return next;
  }
}
