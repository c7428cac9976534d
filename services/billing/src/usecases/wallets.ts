// Over 300 lines: one wallet batch is planned here end to end (queue, head, hints, look-ups; decision 0137).
import { type TenantScope } from '@voiceapi/kit/grpc';
import { type Logger } from '@voiceapi/kit/service';
import { Coalescer } from '@voiceapi/kit/work';
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
  /** The head last seen here (the next append checks only the entry after it). */
  state?: WalletState;
  announcedSeq?: number;
  /** A head hint waiting to be written (at most one write a wallet per HINT_EVERY_MS). */
  hint?: { state: WalletState; announcedSeq?: number };
  /** Whether the last hint written said the wallet holds credit (the sweeper looks there). */
  hintedHolds?: boolean;
  hintTimer?: NodeJS.Timeout;
  /** Head reads asked during one share the next (a quote per dialled call: one read, not one each). */
  reads?: Coalescer<void, WalletState>;
}

/** Hints only speed up cold reads and guide the sweeper; a lost one costs a walk forward or a repeated event. */
const HINT_EVERY_MS = 1_000;

const MAX_KNOWN = 10_000;

/** A call with an open hold has no posted reference yet, so such an op (most captures) skips the look-up. */
const heldOpen = (open: ReadonlyMap<string, Hold>, op: WalletOp): boolean =>
  (op.kind === 'capture' || op.kind === 'release') && open.has(op.callId);

interface Waiting {
  op: WalletOp;
  resolve: (r: WalletResult) => void;
  reject: (e: unknown) => void;
}

/**
 * The wallets: a tenant's queued requests are planned together and appended in one insert (group commit); another
 * replica appending first only costs a re-plan (decision 0050). What each op decides is in domain/wallet-ops.ts.
 */
export class Wallets {
  private readonly queues = new Map<string, Queue>();
  /** Read with `peek` except in `knownOf`, the one use that counts as using the wallet. */
  private readonly known = new LRUCache<string, Known>({ max: MAX_KNOWN, dispose: (k) => clearTimeout(k.hintTimer) });

  /** The open holds a listing entry names, by `_id` (entries never change). */
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

  /** The head, walked forward from what this process last saw; its own appends meanwhile are skipped over. */
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

  /** Its head is read afresh next time; a waiting hint is dropped (best effort). */
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
    // The last head seen is trusted: a newer one makes the insert fail. Only a batch appending nothing checks first.
    let cached = this.known.peek(scope.tenantId)?.state;
    for (let conflicts = 0; rest.length > 0; conflicts++) {
      if (conflicts > MAX_CONFLICTS) {
        for (const w of rest)
          w.reject(billingReasons.error('wallet_busy', 'the wallet kept changing under this request; try again'));
        return;
      }
      const head = cached ?? (await this.head(scope));
      // Looked up after the head: anything another writer posts later lands past it and conflicts (decision 0050).
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
      // Replays, no-ops and refusals are answered only once everything went in: their head was current.
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
   * The holds open at `head` for these ops' calls: listed in the head (billing 1.2 or `compat`), else read from
   * the chain after the last list: open unless a later entry of the call closed it (decision 0137).
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
