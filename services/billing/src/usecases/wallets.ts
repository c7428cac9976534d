import { Types } from 'mongoose';
import type { Logger } from '@voiceapi/kit';
import {
  apply,
  available,
  rowOf,
  EMPTY_WALLET,
  type CallFacts,
  type Direction,
  type Entry,
  type EntryChange,
  type Hold,
  type LedgerRow,
  type TransactionType,
  type WalletState,
} from '../domain/wallet';
import { billingReasons } from '../reasons';
import type { WalletStore } from '../store/wallet-store';

/** One change asked of a wallet. */
export type WalletOp =
  | { kind: 'topUp'; reference: string; amount: number; description: string }
  | { kind: 'debit'; reference: string; amount: number; type: Exclude<TransactionType, 'top_up' | 'call_deduction'>; description: string }
  | { kind: 'hold'; callId: string; amount: number; direction: Direction; expiresAt: Date }
  | { kind: 'capture'; callId: string; amount: number; description: string; call?: CallFacts }
  /** `final`: the call is settled without a charge; a later capture of it charges nothing. */
  | { kind: 'release'; callId: string; final?: boolean; reason?: string };

export interface WalletResult {
  /** The wallet right after this op (or as read, for a replay or a no-op). */
  state: WalletState;
  /** The ledger row written, or the original one for a replay. */
  row?: LedgerRow;
  replayed: boolean;
  hold?: Hold;
  /** `release`: whether a hold was open. */
  released?: boolean;
  /** `capture`: credits the wallet could not cover (0 when fully charged). */
  shortfall?: number;
  /** The call was settled before without a charge (a final release): why. Nothing was charged now. */
  settledWithoutCharge?: string;
}

/** Entries appended together: their rows are announced from here (see `announce`). */
export type AppendedListener = (tenantId: string, entries: readonly Entry[]) => Promise<void>;

export const callReference = (callId: string) => `call:${callId}`;

/**
 * Entries per append: one insert of this many instead of one per request. Each entry carries the
 * batch's references so far (see pendingRefs), so a batch costs its square in reference copies.
 */
const MAX_BATCH = 64;
/** Conflicts with other replicas in a row before a request gives up (`wallet_busy`). */
const MAX_CONFLICTS = 50;
/** Posted references older than this are indexed and leave `pendingRefs`. */
const PENDING_REF_MS = 2_000;

interface Queue {
  waiting: Waiting[];
  running: boolean;
}

/** What this process knows of a wallet, kept while its queue comes and goes. */
interface Known {
  /** The head this process last saw (the next append checks only the entry after it). */
  state?: WalletState;
  /** The chain is announced up to here (by this process, or as the head hint said). */
  announcedSeq?: number;
  /** A head hint waiting to be written (at most one write a wallet per HINT_EVERY_MS). */
  hint?: { state: WalletState; announcedSeq?: number };
  /** Whether the last hint written said the wallet holds credit (the sweeper looks there). */
  hintedHolds?: boolean;
}

/**
 * Head hints are written at most this often per wallet: they only speed up cold reads and guide
 * the sweeper, and a lost one costs a walk forward or an announcement repeated (same event ids).
 */
const HINT_EVERY_MS = 1_000;

/** Wallets remembered at most (the least recently used are forgotten: a read then finds them). */
const MAX_KNOWN = 10_000;
/** pendingRefs beyond this many are indexed and dropped at the next append (bounds entry size). */
const MAX_PENDING_REFS = 32;

interface Waiting {
  op: WalletOp;
  resolve: (r: WalletResult) => void;
  reject: (e: unknown) => void;
}

/** What planning decided for one op. */
type Decision =
  | { entry: number; result: Omit<WalletResult, 'state'> }
  | { replaySeq: number; op: WalletOp }
  | { done: Omit<WalletResult, 'state'> }
  | { error: Error };

/**
 * The wallets. Each tenant's requests wait in one queue per process and are planned together
 * against the head: an append carries every entry the batch produced (group commit), so a burst
 * of a thousand debits on one wallet is a handful of inserts. Another replica appending first
 * only costs a re-plan (decision 0050).
 */
export class Wallets {
  private readonly queues = new Map<string, Queue>();
  private readonly known = new Map<string, Known>();
  private readonly hintTimers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly store: WalletStore,
    private readonly log: Logger,
    private readonly onAppended: AppendedListener = async () => undefined,
  ) {}

  run(tenantId: string, op: WalletOp): Promise<WalletResult> {
    return new Promise((resolve, reject) => {
      let q = this.queues.get(tenantId);
      if (!q) this.queues.set(tenantId, (q = { waiting: [], running: false }));
      q.waiting.push({ op, resolve, reject });
      if (!q.running) void this.drain(tenantId, q);
    });
  }

  /** The wallet's newest state. */
  async read(tenantId: string): Promise<WalletState> {
    return this.head(tenantId);
  }

  /** The head, walking forward from what this process last saw (or from the stored hint). */
  private async head(tenantId: string): Promise<WalletState> {
    const k = this.knownOf(tenantId);
    if (!k.state) {
      const hint = await this.store.hint(tenantId);
      // No hint yet: nothing of this wallet was announced.
      k.announcedSeq ??= hint?.announcedSeq ?? 0;
      k.state = await this.store.head(tenantId, undefined, hint?.seq);
      return k.state;
    }
    const state = await this.store.head(tenantId, k.state);
    if (state.seq > k.state.seq) k.state = state;
    return state;
  }

  /** Writes the hints still waiting (on stop). */
  async stop(): Promise<void> {
    await Promise.all([...this.hintTimers.keys()].map((t) => this.writeHint(t)));
  }

  private async writeHint(tenantId: string): Promise<void> {
    clearTimeout(this.hintTimers.get(tenantId));
    this.hintTimers.delete(tenantId);
    const k = this.known.get(tenantId);
    const hint = k?.hint;
    if (!k || !hint) return;
    k.hint = undefined;
    try {
      await this.store.noteHead(tenantId, hint.state, hint.announcedSeq);
      k.hintedHolds = hint.state.holds.length > 0;
    } catch (err) {
      this.log.warn({ err, tenantId }, 'could not note the wallet head');
    }
  }

  private knownOf(tenantId: string): Known {
    let k = this.known.get(tenantId);
    if (k) {
      this.known.delete(tenantId); // re-inserted last: the map's order is least recently used first
    } else {
      k = {};
      if (this.known.size >= MAX_KNOWN) this.known.delete(this.known.keys().next().value!);
    }
    this.known.set(tenantId, k);
    return k;
  }

  private async drain(tenantId: string, q: Queue): Promise<void> {
    q.running = true;
    try {
      while (q.waiting.length > 0) {
        const batch = q.waiting.splice(0, MAX_BATCH);
        try {
          await this.runBatch(tenantId, batch);
        } catch (err) {
          this.known.delete(tenantId); // read the head afresh next time
          for (const w of batch) w.reject(err);
        }
      }
    } finally {
      q.running = false;
      if (q.waiting.length === 0) this.queues.delete(tenantId);
    }
  }

  private async runBatch(tenantId: string, batch: Waiting[]): Promise<void> {
    const refSeqs = new Map<string, number>();
    let rest = batch;
    // The head this process last saw is used as it is: if another writer appended since, the
    // insert at the next seq fails and the loop reads the head. Only a batch that appends
    // nothing (replays, refusals) must first check that the head is still the newest.
    let cached = this.known.get(tenantId)?.state;
    for (let conflicts = 0; rest.length > 0; conflicts++) {
      if (conflicts > MAX_CONFLICTS) {
        for (const w of rest) w.reject(billingReasons.error('wallet_busy', 'the wallet kept changing under this request; try again'));
        return;
      }
      const head = cached ?? (await this.head(tenantId));
      // Looked up only now, after the head was appended: a reference posted before the head is
      // in its pendingRefs or was indexed before it left them (decision 0050). Looked up before
      // reading the head, it could have moved from one to the other in between.
      const unknown = rest.map((w) => w.op).filter((op) => {
        const ref = referenceOf(op);
        return ref !== undefined && !refSeqs.has(ref);
      });
      for (const [ref, seq] of await this.indexedRefs(tenantId, unknown)) refSeqs.set(ref, seq);
      const at = new Date();
      const { entries, decisions } = plan(head, rest.map((w) => w.op), refSeqs, at);
      if (cached && entries.length === 0 && (await this.head(tenantId)).seq !== cached.seq) {
        cached = undefined;
        continue;
      }
      cached = undefined;
      const pruned = await this.prunePendingRefs(tenantId, head, entries, at);
      const inserted = await this.store.append(tenantId, pruned, at);
      const committed = inserted === pruned.length;
      const last = inserted > 0 ? pruned[inserted - 1]!.state : head;
      // After a conflict the next head read walks forward from what did go in.
      this.knownOf(tenantId).state = last;
      // Answer what is settled: ops whose entry went in, and (only once everything went in)
      // replays, no-ops and refusals, which were decided against a head that was still current.
      const next: Waiting[] = [];
      await Promise.all(
        rest.map(async (w, i) => {
          const d = decisions[i]!;
          if ('entry' in d) {
            const e = pruned[d.entry]!;
            if (d.entry < inserted) return w.resolve({ ...d.result, state: e.state, ...withRow(e, at) });
            return next.push(w);
          }
          if (!committed) return next.push(w);
          if ('error' in d) return w.reject(d.error);
          if ('done' in d) return w.resolve({ ...d.done, state: last });
          await this.replay(tenantId, d.replaySeq, d.op, last).then(w.resolve, w.reject);
        }),
      );
      if (inserted > 0) await this.afterAppend(tenantId, pruned.slice(0, inserted));
      rest = next;
    }
  }

  /** References already indexed (posted long enough ago to have left the head's pendingRefs). */
  private async indexedRefs(tenantId: string, ops: readonly WalletOp[]): Promise<Map<string, number>> {
    const refs = new Set(ops.map(referenceOf).filter((r): r is string => r !== undefined));
    const found = new Map<string, number>();
    await Promise.all(
      [...refs].map(async (ref) => {
        const seq = await this.store.refSeq(tenantId, ref);
        if (seq !== undefined) found.set(ref, seq);
      }),
    );
    return found;
  }

  /**
   * Drops older posted references from the entries' states, once they are indexed: a
   * reference is in the index or in the head's pendingRefs, never in neither.
   */
  /**
   * Keeps pendingRefs short: past MAX_PENDING_REFS, or older than PENDING_REF_MS, references are
   * indexed (one insert for all of them) and left out of the new entries. A reference is in the
   * index or in the head's pendingRefs, never in neither.
   */
  private async prunePendingRefs(tenantId: string, head: WalletState, entries: Entry[], at: Date): Promise<Entry[]> {
    if (entries.length === 0 || head.pendingRefs.length === 0) return entries;
    const old = head.pendingRefs.length > MAX_PENDING_REFS ? head.pendingRefs : head.pendingRefs.filter((p) => at.getTime() - new Date(p.at).getTime() > PENDING_REF_MS);
    if (old.length === 0) return entries;
    await this.store.confirmRefs(tenantId, old);
    const drop = new Set(old.map((p) => p.ref));
    return entries.map((e) => ({ change: e.change, state: { ...e.state, pendingRefs: e.state.pendingRefs.filter((p) => !drop.has(p.ref)) } }));
  }

  private async afterAppend(tenantId: string, entries: Entry[]): Promise<void> {
    const k = this.knownOf(tenantId);
    const first = entries[0]!.state.seq;
    const last = entries[entries.length - 1]!.state;
    let announced = false;
    try {
      await this.onAppended(tenantId, entries);
      announced = true;
    } catch (err) {
      // The entries are in; the sweeper announces what could not be announced now.
      this.log.warn({ err, tenantId }, 'could not announce appended wallet entries yet');
    }
    // The hint moves whether or not the announcement went out; the cursor only without a gap.
    const contiguous = announced && k.announcedSeq !== undefined && k.announcedSeq >= first - 1;
    if (contiguous) k.announcedSeq = last.seq;
    const scheduled = k.hint !== undefined;
    const announcedSeq = contiguous ? last.seq : k.hint?.announcedSeq;
    k.hint = { state: last, ...(announcedSeq !== undefined && { announcedSeq }) };
    // A wallet that starts (or stops) holding credit is told to the sweeper at once.
    if ((last.holds.length > 0) !== (k.hintedHolds ?? false)) await this.writeHint(tenantId);
    else if (!scheduled) this.hintTimers.set(tenantId, setTimeout(() => void this.writeHint(tenantId), HINT_EVERY_MS));
  }

  private async replay(tenantId: string, seq: number, op: WalletOp, state: WalletState): Promise<WalletResult> {
    const row = await this.store.rowAt(tenantId, seq);
    // A call reference posted by a final release: settled without a charge.
    if (!row) {
      if (op.kind !== 'capture' && op.kind !== 'release') {
        throw billingReasons.error('reference_conflict', `reference ${referenceOf(op)} names a call settled without a charge`);
      }
      const entry = await this.store.entryAt(tenantId, seq);
      const change = entry?.change;
      const reason = (change?.kind === 'release' && change.reason) || 'end_not_reported';
      return { state, replayed: true, settledWithoutCharge: reason, ...(op.kind === 'capture' && { shortfall: 0 }), ...(op.kind === 'release' && { released: false }) };
    }
    const wanted = expectedRow(op);
    if (wanted && (wanted.type !== row.type || (wanted.amount !== undefined && wanted.amount !== row.amount))) {
      throw billingReasons.error('reference_conflict', `reference ${row.reference} was posted before with another amount or type (${row.type} ${row.amount})`);
    }
    if (op.kind === 'hold') throw billingReasons.error('reference_conflict', `call ${op.callId} has been charged already`);
    return { state, row, replayed: true, ...(op.kind === 'capture' && { shortfall: 0 }), ...(op.kind === 'release' && { released: false }) };
  }
}

function withRow(e: Entry, at: Date): { row?: LedgerRow } {
  const row = rowOf(e.change, e.state, at);
  return row ? { row } : {};
}

function referenceOf(op: WalletOp): string | undefined {
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

/** Decides every op in order against the head; the entries to append carry their states. */
export function plan(head: WalletState, ops: readonly WalletOp[], indexed: ReadonlyMap<string, number>, at: Date): { entries: Entry[]; decisions: Decision[] } {
  let state = head;
  const entries: Entry[] = [];
  const add = (change: EntryChange): number => {
    state = apply(state, change, at);
    entries.push({ change, state });
    return entries.length - 1;
  };
  const posted = (ref: string): number | undefined => indexed.get(ref) ?? state.pendingRefs.find((p) => p.ref === ref)?.seq;
  const insufficient = (need: number) =>
    billingReasons.error('insufficient_credits', `the available balance (${available(state)} credits) cannot cover ${need} credits`);

  const decisions = ops.map((op): Decision => {
    const ref = referenceOf(op);
    const seq = ref === undefined ? undefined : posted(ref);
    switch (op.kind) {
      case 'topUp':
        if (seq !== undefined) return { replaySeq: seq, op };
        return { entry: add({ kind: 'ledger', rowId: newRowId(), type: 'top_up', amount: op.amount, reference: op.reference, description: op.description }), result: { replayed: false } };
      case 'debit':
        if (seq !== undefined) return { replaySeq: seq, op };
        if (available(state) < op.amount) return { error: insufficient(op.amount) };
        return { entry: add({ kind: 'ledger', rowId: newRowId(), type: op.type, amount: -op.amount, reference: op.reference, description: op.description }), result: { replayed: false } };
      case 'hold': {
        const open = state.holds.find((h) => h.callId === op.callId);
        if (open) {
          if (open.amount !== op.amount) return { error: billingReasons.error('reference_conflict', `call ${op.callId} already holds ${open.amount} credits`) };
          return { done: { replayed: true, hold: open } };
        }
        if (seq !== undefined) return { replaySeq: seq, op };
        if (available(state) < op.amount) return { error: insufficient(op.amount) };
        const hold: Hold = { callId: op.callId, amount: op.amount, direction: op.direction, createdAt: at, expiresAt: op.expiresAt };
        return { entry: add({ kind: 'hold', hold }), result: { replayed: false, hold } };
      }
      case 'capture': {
        if (seq !== undefined) return { replaySeq: seq, op };
        const open = state.holds.find((h) => h.callId === op.callId);
        // Never below zero: the hold first, then what is available; the rest is a shortfall.
        const charge = Math.min(op.amount, available(state) + (open?.amount ?? 0));
        if (charge <= 0) {
          // Nothing to take: the call is settled for good all the same (its reference posted),
          // so a retry after a top-up cannot charge a call already billed as failed.
          const release: EntryChange = { kind: 'release', callId: op.callId, reference: ref, reason: 'insufficient_credits' };
          return { entry: add(release), result: { replayed: false, shortfall: op.amount, released: open !== undefined } };
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
        };
        return { entry: add(change), result: { replayed: false, shortfall: op.amount - charge, released: open !== undefined } };
      }
      case 'release': {
        if (seq !== undefined) return { replaySeq: seq, op };
        const open = state.holds.find((h) => h.callId === op.callId);
        if (op.final) {
          const release: EntryChange = { kind: 'release', callId: op.callId, reference: ref, ...(op.reason !== undefined && { reason: op.reason }) };
          return { entry: add(release), result: { replayed: false, released: open !== undefined } };
        }
        if (!open) return { done: { replayed: false, released: false } };
        return { entry: add({ kind: 'release', callId: op.callId }), result: { replayed: false, released: true } };
      }
    }
  });
  return { entries, decisions };
}

const newRowId = () => new Types.ObjectId().toHexString();

export { EMPTY_WALLET };
