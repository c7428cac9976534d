import { scopeOfRecord } from '@voiceapi/kit/grpc';
import { type TypedCounter } from '@voiceapi/kit/metrics';
import { type Logger } from '@voiceapi/kit/service';
import { type PassResult } from '@voiceapi/kit/work';
import { markOf, tally, tallyOf, type AuditMark } from '../domain/ledger-audit';
import type { AuditStore } from '../store/audit-store';
import type { ChangedHead, WalletStore } from '../store/wallet-store';

/** Changed wallets audited in one pass; a full page is followed by another pass at once. */
const PAGE = 500;
/** Overlap with the last sweep: hints are noted up to a second late, stamped by another replica's clock. */
const LOOK_BACK_MS = 60_000;

export interface LedgerAuditDeps {
  store: Pick<WalletStore, 'headsChangedSince' | 'entryAt' | 'rowsBetween'>;
  audits: Pick<AuditStore, 'marks' | 'save'>;
  log: Logger;
  now: () => Date;
  audited?: TypedCounter<Record<string, never>>;
}

/**
 * Checks the new entries of wallets whose head hint moved: each row's balance against the sum of rows up to it
 * (decision 0050; domain/ledger-audit.ts), resuming from the wallet's mark. An unbalanced wallet is logged as an
 * error each audit and counted in `voiceapi.billing.ledger.unbalanced_wallets`.
 */
export class LedgerAudit {
  private sweep: { since: Date; startedAt: Date; failed: boolean } | undefined;
  /** Unset: the first sweep looks at every hint. */
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
        // The next sweep begins where this one did.
        sweep.failed = true;
        this.d.log.warn({ err, tenantId: head.tenantId }, 'could not audit a wallet yet');
      }
    }
    await this.d.audits.save(checked, this.d.now());
    this.d.audited?.add(checked.length, {});
    if (heads.length === PAGE) {
      const last = heads[heads.length - 1]!.updatedAt;
      // A page all at one moment: move past it (the rest of that moment waits for its next change).
      sweep.since = last.getTime() > sweep.since.getTime() ? last : new Date(sweep.since.getTime() + 1);
      return 'more';
    }
    this.sweep = undefined;
    if (!sweep.failed) this.nextSince = new Date(sweep.startedAt.getTime() - LOOK_BACK_MS);
    return 'done';
  }

  /** Checks entries after the mark up to the hint; returns the new mark. */
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
