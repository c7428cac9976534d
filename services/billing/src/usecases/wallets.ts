// Over 300 lines because a batch of one wallet is planned here end to end: its queue, the head, the hints and the lookups of posted references and open holds (decision 0137) share what this process knows of the wallet.
import { Coalescer, type Logger, type TenantScope } from '@voiceapi/kit';
import { LRUCache } from 'lru-cache';
import {
  callIdOf,
  plan,
  referenceOf,
  replayResult,
  withRow,
  type WalletOp,
  type WalletResult,
} from '../domain/wallet-ops';
import { openHoldCount, type Entry, type EntryFormat, type Hold, type WalletState } from '../domain/wallet';
import { billingReasons } from '../reasons';
import type { WalletStore } from '../store/wallet-store';

/** Entries appended together, and the wallet before them: their rows are announced from here (see `announce`). */
export type AppendedListener = (scope: TenantScope, entries: readonly Entry[], before: WalletState) => Promise<void>;

/** Entries per append: one insert of this many instead of one per request. */
const MAX_BATCH = 256;
/** Conflicts with other replicas in a row before a request gives up (`wallet_busy`). */
const MAX_CONFLICTS = 50;

interface Queue {
  scope: TenantScope;
  waiting: Waiting[];
  running: boolean;
}

/** What this process knows of a wallet, kept while its queue comes and goes. */
interface Known {
  scope: TenantScope;
  /** The head this process last saw (the next append checks only the entry after it). */
  state?: WalletState;
  /** The chain is announced up to here (by this process, or as the head hint said). */
  announcedSeq?: number;
  /** A head hint waiting to be written (at most one write a wallet per HINT_EVERY_MS). */
  hint?: { state: WalletState; announcedSeq?: number };
  /** Whether the last hint written said the wallet holds credit (the sweeper looks there). */
  hintedHolds?: boolean;
  /** Writes `hint` when it is due. */
  hintTimer?: NodeJS.Timeout;
  /**
   * Reads of the head asked while one is under way share the next one, begun after they were
   * asked (a quote for every call being dialled: one read, not one each).
   */
  reads?: Coalescer<void, WalletState>;
}

/**
 * Head hints are written at most this often per wallet: they only speed up cold reads and guide
 * the sweeper, and a lost one costs a walk forward or an announcement repeated (same event ids).
 */
const HINT_EVERY_MS = 1_000;

/** Wallets remembered at most (the least recently used are forgotten: a read then finds them). */
const MAX_KNOWN = 10_000;

/**
 * A call with a hold open at the head has not been charged or settled: a capture or a final
 * release closes its hold in the entry that posts its reference, and a hold is never placed
 * for a call whose reference is posted. Such an op needs no reference look-up (most captures).
 */
const heldOpen = (open: ReadonlyMap<string, Hold>, op: WalletOp): boolean =>
  (op.kind === 'capture' || op.kind === 'release') && open.has(op.callId);

interface Waiting {
  op: WalletOp;
  resolve: (r: WalletResult) => void;
  reject: (e: unknown) => void;
}

/**
 * The wallets. Each tenant's requests wait in one queue per process and are planned together
 * against the head: an append carries every entry the batch produced (group commit), so a burst
 * of a thousand debits on one wallet is a handful of inserts. Another replica appending first
 * only costs a re-plan (decision 0050). This is the mechanism (queues, the heads this process
 * knows, head hints, replays); what each op decides is domain/wallet-ops.ts.
 */
export class Wallets {
  private readonly queues = new Map<string, Queue>();
  /** Read with `peek` except in `knownOf`, the one use that counts as using the wallet; a wallet forgotten (evicted or deleted) has its hint timer stopped. */
  private readonly known = new LRUCache<string, Known>({ max: MAX_KNOWN, dispose: (k) => clearTimeout(k.hintTimer) });

  /** The open holds a listing entry names, by `_id` (immutable: a fixed-size entry's `listedUpTo`). */
  private readonly bases = new LRUCache<string, Hold[]>({ max: 1_000 });

  constructor(
    private readonly store: WalletStore,
    private readonly log: Logger,
    private readonly onAppended: AppendedListener = () => Promise.resolve(),
    /** How entries are written (decision 0137); `compat` until no billing 1.2 replica appends. */
    private readonly format: EntryFormat = 'fixed',
  ) {}

  run(scope: TenantScope, op: WalletOp): Promise<WalletResult> {
    return new Promise((resolve, reject) => {
      let q = this.queues.get(scope.tenantId);
      if (!q) this.queues.set(scope.tenantId, (q = { scope, waiting: [], running: false }));
      q.waiting.push({ op, resolve, reject });
      if (!q.running) void this.drain(q);
    });
  }

  /** The wallet's newest state: every entry acknowledged before the call is in it. */
  read(scope: TenantScope): Promise<WalletState> {
    const k = this.knownOf(scope);
    k.reads ??= new Coalescer(async (asked) => {
      const state = await this.head(scope);
      return asked.map(() => state);
    });
    return k.reads.run();
  }

  /**
   * The head, walking forward from what this process last saw (or from the stored hint). While
   * it walks, this process's own appends move it on at once: only entries of other writers are
   * read one by one.
   */
  private async head(scope: TenantScope): Promise<WalletState> {
    const k = this.knownOf(scope);
    if (!k.state) {
      const hint = await this.store.hint(scope);
      // No hint yet: nothing of this wallet was announced.
      k.announcedSeq ??= hint?.announcedSeq ?? 0;
      k.state = await this.store.head(scope, undefined, hint?.seq, () => this.known.peek(scope.tenantId)?.state);
      return k.state;
    }
    const state = await this.store.head(scope, k.state, undefined, () => this.known.peek(scope.tenantId)?.state);
    if (state.seq > (k.state?.seq ?? -1)) k.state = state;
    return state;
  }

  /** Writes the hints still waiting (on stop). */
  async stop(): Promise<void> {
    await Promise.all([...this.known.values()].filter((k) => k.hint).map((k) => this.writeHint(k)));
  }

  private async writeHint(k: Known): Promise<void> {
    clearTimeout(k.hintTimer);
    k.hintTimer = undefined;
    const hint = k.hint;
    if (!hint) return;
    k.hint = undefined;
    try {
      await this.store.noteHead(k.scope, hint.state, hint.announcedSeq);
      k.hintedHolds = openHoldCount(hint.state) > 0;
    } catch (err) {
      this.log.warn({ err, tenantId: k.scope.tenantId }, 'could not note the wallet head');
    }
  }

  private knownOf(scope: TenantScope): Known {
    let k = this.known.get(scope.tenantId); // `get` makes it the most recently used
    if (!k) this.known.set(scope.tenantId, (k = { scope })); // past MAX_KNOWN, the least recently used is forgotten
    return k;
  }

  /** Forgets a wallet: its head is read afresh next time, and a hint still waiting is dropped (hints are best effort; `dispose` stops its timer). */
  private forget(k: Known): void {
    this.known.delete(k.scope.tenantId);
  }

  private async drain(q: Queue): Promise<void> {
    q.running = true;
    try {
      while (q.waiting.length > 0) {
        const batch = q.waiting.splice(0, MAX_BATCH);
        try {
          await this.runBatch(q.scope, batch);
        } catch (err) {
          const k = this.known.peek(q.scope.tenantId);
          if (k) this.forget(k); // read the head afresh next time
          for (const w of batch) w.reject(err);
        }
      }
    } finally {
      q.running = false;
      if (q.waiting.length === 0) this.queues.delete(q.scope.tenantId);
    }
  }

  private async runBatch(scope: TenantScope, batch: Waiting[]): Promise<void> {
    const refSeqs = new Map<string, number>();
    let rest = batch;
    // The head this process last saw is used as it is: if another writer appended since, the
    // insert at the next seq fails and the loop reads the head. Only a batch that appends
    // nothing (replays, refusals) must first check that the head is still the newest.
    let cached = this.known.peek(scope.tenantId)?.state;
    for (let conflicts = 0; rest.length > 0; conflicts++) {
      if (conflicts > MAX_CONFLICTS) {
        for (const w of rest)
          w.reject(billingReasons.error('wallet_busy', 'the wallet kept changing under this request; try again'));
        return;
      }
      const head = cached ?? (await this.head(scope));
      // Looked up after the head was appended (or read): every entry up to it is seen, and a
      // reference posted or a hold placed or closed by another writer after it lands at a later
      // seq, so this append conflicts and the next turn looks again (decision 0050).
      const ops = rest.map((w) => w.op);
      const open = await this.openHolds(scope, head, ops);
      const unknown = ops.filter((op) => {
        const ref = referenceOf(op);
        return ref !== undefined && !refSeqs.has(ref) && !heldOpen(open, op);
      });
      for (const [ref, seq] of await this.postedRefs(scope, unknown)) refSeqs.set(ref, seq);
      const at = new Date();
      const { entries, decisions } = plan(head, ops, { posted: refSeqs, open }, at, this.format);
      if (cached && entries.length === 0 && (await this.head(scope)).seq !== cached.seq) {
        cached = undefined;
        continue;
      }
      cached = undefined;
      const inserted = await this.store.append(scope, entries, at);
      const committed = inserted === entries.length;
      const last = inserted > 0 ? entries[inserted - 1]!.state : head;
      // After a conflict the next head read walks forward from what did go in.
      this.knownOf(scope).state = last;
      // Answer what is settled: ops whose entry went in, and (only once everything went in)
      // replays, no-ops and refusals, which were decided against a head that was still current.
      const next: Waiting[] = [];
      await Promise.all(
        rest.map(async (w, i) => {
          const d = decisions[i]!;
          if ('entry' in d) {
            const e = entries[d.entry]!;
            if (d.entry < inserted) return w.resolve({ ...d.result, state: e.state, ...withRow(e, at) });
            return next.push(w);
          }
          if (!committed) return next.push(w);
          if ('error' in d) return w.reject(d.error);
          if ('done' in d) return w.resolve({ ...d.done, state: last });
          await this.replay(scope, d.replaySeq, d.op, last).then(w.resolve, w.reject);
        }),
      );
      if (inserted > 0) await this.afterAppend(scope, entries.slice(0, inserted), head);
      rest = next;
    }
  }

  /**
   * The holds open at `head` for these ops' calls: listed in the head (an entry billing 1.2, or
   * the `compat` format, wrote), or read from the chain: a call's hold is open when no later
   * entry of the call closed it (decision 0137). A fixed-size head in a chain that once listed
   * them starts from the last list and reads the chain after it.
   */
  async openHolds(scope: TenantScope, head: WalletState, ops: readonly WalletOp[]): Promise<Map<string, Hold>> {
    const callIds = [...new Set(ops.map(callIdOf).filter((c): c is string => c !== undefined))];
    const open = new Map<string, Hold>();
    if (callIds.length === 0 || openHoldCount(head) === 0) return open;
    const wanted = new Set(callIds);
    if (head.holds) {
      for (const h of head.holds) if (wanted.has(h.callId)) open.set(h.callId, h);
      return open;
    }
    const listed = head.listedUpTo;
    if (listed !== undefined)
      for (const h of await this.baseHolds(scope, listed)) if (wanted.has(h.callId)) open.set(h.callId, h);
    for (const e of await this.store.callEntries(scope, callIds, head.seq)) {
      if (listed !== undefined && e.seq <= listed) continue; // the list at `listed` says what they left open
      if (e.hold) open.set(e.callId, e.hold);
      else open.delete(e.callId);
    }
    return open;
  }

  /** The open holds an entry lists (read once: an entry never changes). */
  async baseHolds(scope: TenantScope, seq: number): Promise<Hold[]> {
    const key = `${scope.tenantId}:${seq}`;
    let holds = this.bases.get(key);
    if (!holds) {
      holds = (await this.store.entryAt(scope, seq))?.state.holds ?? [];
      this.bases.set(key, holds);
    }
    return holds;
  }

  /** Where the ops' references were posted in the chain, for those that were. */
  private postedRefs(scope: TenantScope, ops: readonly WalletOp[]): Promise<Map<string, number>> {
    return this.store.posted(scope, [...new Set(ops.map(referenceOf).filter((r): r is string => r !== undefined))]);
  }

  private async afterAppend(scope: TenantScope, entries: Entry[], before: WalletState): Promise<void> {
    const k = this.knownOf(scope);
    const first = entries[0]!.state.seq;
    const last = entries[entries.length - 1]!.state;
    let announced = false;
    try {
      await this.onAppended(scope, entries, before);
      announced = true;
    } catch (err) {
      // The entries are in; the sweeper announces what could not be announced now.
      this.log.warn({ err, tenantId: scope.tenantId }, 'could not announce appended wallet entries yet');
    }
    // The hint moves whether or not the announcement went out; the cursor only without a gap.
    const contiguous = announced && k.announcedSeq !== undefined && k.announcedSeq >= first - 1;
    if (contiguous) k.announcedSeq = last.seq;
    const scheduled = k.hint !== undefined;
    const announcedSeq = contiguous ? last.seq : k.hint?.announcedSeq;
    k.hint = { state: last, ...(announcedSeq !== undefined && { announcedSeq }) };
    // A wallet that starts (or stops) holding credit is told to the sweeper at once.
    if (openHoldCount(last) > 0 !== (k.hintedHolds ?? false)) await this.writeHint(k);
    else if (!scheduled) k.hintTimer = setTimeout(() => void this.writeHint(k), HINT_EVERY_MS);
  }

  private async replay(scope: TenantScope, seq: number, op: WalletOp, state: WalletState): Promise<WalletResult> {
    const row = await this.store.rowAt(scope, seq);
    if (row) return replayResult(op, { row }, state);
    // A call reference posted by a final release: settled without a charge.
    const change = (await this.store.entryAt(scope, seq))?.change;
    return replayResult(
      op,
      { releaseReason: (change?.kind === 'release' && change.reason) || 'end_not_reported' },
      state,
    );
  }
}
