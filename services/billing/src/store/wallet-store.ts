// Over 300 lines because a wallet's entries and their head are written together (one append), so they share one store.
import { type TenantScope } from '@voiceapi/kit/grpc';
import {
  isDuplicateKeyError,
  modelOf,
  stringIds,
  TenantCollection,
  TenantKeyed,
  type QueryShape,
} from '@voiceapi/kit/mongo';
import { randomUUID } from 'node:crypto';
import { Schema, type Connection } from 'mongoose';
import type { RowFigures } from '../domain/ledger-audit';
import {
  EMPTY_WALLET,
  openHoldCount,
  postedReference,
  rowOf,
  type CallFacts,
  type Entry,
  type EntryChange,
  type Hold,
  type LedgerRow,
  type TransactionType,
  type WalletState,
} from '../domain/wallet';

/**
 * The wallet chains (decision 0050). `wallet_entries` is the truth: `_id` is `<tenantId>:<seq>`, so only one
 * writer can insert entry n+1. `wallet_heads` keeps per tenant a head hint (may lag) and the Kafka cursor.
 */
interface EntryDoc {
  _id: string;
  tenantId: string;
  seq: number;
  kind: EntryChange['kind'];
  /** The reference this entry posts: a ledger row's, or a final release's (`call:<id>`). */
  reference?: string;
  /** Ledger rows only. */
  rowId?: string;
  type?: TransactionType;
  amount?: number;
  description?: string;
  /** A call's row, hold or release (holds and releases billing 1.2 wrote name it only in `change`). */
  callId?: string;
  call?: CallFacts;
  balanceAfter?: number;
  /** A call's row: the credits of the hold it closed. */
  released?: number;
  /** A hold: when it expires (the sweeper's range; decision 0137). */
  expiresAt?: Date;
  /** The change itself, for holds and releases. */
  change?: EntryChange;
  state: WalletState;
  createdAt: Date;
  /** Which append wrote it: after a conflict the writer counts what it inserted by this. */
  writer: string;
}

const entrySchema = new Schema<EntryDoc>(
  {
    _id: String,
    tenantId: { type: String, required: true },
    seq: { type: Number, required: true },
    kind: { type: String, required: true },
    rowId: String,
    type: String,
    amount: Number,
    reference: String,
    description: String,
    callId: String,
    call: Schema.Types.Mixed,
    balanceAfter: Number,
    released: Number,
    expiresAt: Date,
    change: Schema.Types.Mixed,
    state: { type: Schema.Types.Mixed, required: true },
    createdAt: { type: Date, required: true },
    writer: { type: String, required: true },
  },
  { collection: 'wallet_entries', versionKey: false },
);
// One index per query shape below, in the same order (`callEntries`: decision 0137).
entrySchema.index({ tenantId: 1, kind: 1, seq: -1 });
entrySchema.index({ tenantId: 1, kind: 1, type: 1, seq: -1 });
entrySchema.index({ tenantId: 1, reference: 1 });
entrySchema.index({ tenantId: 1, callId: 1, seq: 1 });
entrySchema.index({ tenantId: 1, kind: 1, expiresAt: 1 });
const NEWEST_FIRST = { seq: -1 } as const;
export const entryQueryShapes: QueryShape[] = [
  { name: 'rows', equality: ['tenantId', 'kind'], sort: NEWEST_FIRST, range: [] },
  { name: 'rowsOfType', equality: ['tenantId', 'kind', 'type'], sort: NEWEST_FIRST },
  { name: 'posted', equality: ['tenantId', 'reference'] },
  { name: 'callEntries', equality: ['tenantId'], range: ['callId', 'seq'] },
  { name: 'holdsExpiring', equality: ['tenantId', 'kind'], sort: { expiresAt: 1 }, range: ['expiresAt'] },
];
export { entrySchema };

interface HeadDoc {
  /** The tenant id. */
  _id: string;
  seq: number;
  /** Entries up to this seq have had their events stored in the outbox. */
  announcedSeq: number;
  /** Open holds at the last append (a hint for the sweeper). */
  holds: number;
  /** Holds expiring up to here have been read by the sweeper (it reads on from a minute before). */
  holdsSweptTo?: Date;
  updatedAt: Date;
}
/** Heads the sweeper reads at once. */
const HEAD_PAGE = 1_000;
/** Holds `holdsExpiring` reads at once. */
const HOLDS_PAGE = 1_000;
/** Entries whose ledger rows `rowsBetween` reads at once. */
const ROWS_WINDOW = 5_000;
export const headSchema = new Schema<HeadDoc>(
  {
    _id: String,
    seq: { type: Number, required: true },
    announcedSeq: { type: Number, default: 0 },
    holds: { type: Number, default: 0 },
    holdsSweptTo: Date,
    updatedAt: Date,
  },
  { collection: 'wallet_heads', versionKey: false },
);
// Serves `changed`: the wallets whose head moved since the ledger audit's last pass.
headSchema.index({ updatedAt: 1 });
export const headQueryShapes: QueryShape[] = [
  { name: 'changed', equality: [], sort: { updatedAt: 1 }, range: ['updatedAt'] },
];

const entryId = (scope: TenantScope, seq: number) => `${scope.tenantId}:${seq}`;

export interface Head {
  tenantId: string;
  seq: number;
  announcedSeq: number;
  holds: number;
  holdsSweptTo?: Date;
}

/** An entry of a call as `callEntries` reads it: a hold placed, or a row or release that may close one. */
export interface CallEntry {
  seq: number;
  kind: EntryChange['kind'];
  callId: string;
  hold?: Hold;
}

/** A head hint as the ledger audit reads it: a seq at or behind the wallet's head, and when it was noted. */
export interface ChangedHead {
  tenantId: string;
  seq: number;
  updatedAt: Date;
}

export class WalletStore {
  private readonly entries: TenantCollection<EntryDoc, string>;
  private readonly heads: TenantKeyed<HeadDoc>;

  constructor(conn: Connection) {
    this.entries = new TenantCollection(modelOf(conn, 'WalletEntry', entrySchema), stringIds, entryQueryShapes);
    this.heads = new TenantKeyed(modelOf(conn, 'WalletHead', headSchema), headQueryShapes);
  }

  /** The newest state: walks forward by `_id` from `from` (or the head hint) until an entry is missing. */
  async head(
    scope: TenantScope,
    from?: WalletState,
    hintSeq?: number,
    newer?: () => WalletState | undefined,
  ): Promise<WalletState> {
    let state = from;
    if (!state) {
      const seq = hintSeq ?? (await this.hint(scope))?.seq ?? 0;
      const at = seq > 0 ? await this.entryAt(scope, seq) : null;
      state = at ? at.state : EMPTY_WALLET;
    }
    for (;;) {
      // A state known to be in the chain further on (the caller's own appends meanwhile) is a shortcut.
      const ahead = newer?.();
      if (ahead && ahead.seq > state.seq) state = ahead;
      const next = await this.entryAt(scope, state.seq + 1);
      if (!next) return state;
      state = next.state;
    }
  }

  /** The stored head hint: a seq at or behind the head, and the announcement cursor. */
  async hint(scope: TenantScope): Promise<{ seq: number; announcedSeq: number } | undefined> {
    const doc = await this.heads.get(scope);
    return doc ? { seq: doc.seq, announcedSeq: doc.announcedSeq ?? 0 } : undefined;
  }

  async entryAt(scope: TenantScope, seq: number): Promise<EntryDoc | null> {
    return this.entries.findById(scope, entryId(scope, seq));
  }

  /** Appends in order; returns how many were inserted. Fewer means another writer won: re-read and recompute. */
  async append(scope: TenantScope, entries: readonly Entry[], at: Date): Promise<number> {
    if (entries.length === 0) return 0;
    const writer = randomUUID();
    const docs = entries.map(({ change, state }): Omit<EntryDoc, 'tenantId'> => {
      const row = rowOf(change, state, at);
      const reference = postedReference(change);
      return {
        _id: entryId(scope, state.seq),
        seq: state.seq,
        kind: change.kind,
        ...(reference !== undefined && { reference }),
        ...(row
          ? {
              rowId: row.id,
              type: row.type,
              amount: row.amount,
              balanceAfter: row.balanceAfter,
              description: row.description,
              ...(row.callId !== undefined && { callId: row.callId }),
              ...(row.call !== undefined && { call: row.call }),
              ...(change.kind === 'ledger' && change.released !== undefined && { released: change.released }),
            }
          : change.kind === 'hold'
            ? { change, callId: change.hold.callId, expiresAt: change.hold.expiresAt }
            : { change, callId: change.callId }),
        state,
        createdAt: at,
        writer,
      };
    });
    try {
      await this.entries.insertMany(scope, docs);
      return docs.length;
    } catch (err) {
      if (!isDuplicateKeyError(err)) throw err;
      // Ordered: what was inserted is a prefix, told apart by this append's writer token.
      let n = 0;
      for (const d of docs) {
        const got = await this.entries.findById(scope, d._id, { writer: 1 });
        if (got?.writer !== writer) break;
        n++;
      }
      return n;
    }
  }

  /** Best effort: readers walk forward from the hint, so lag is harmless; `$max` keeps it from going back. */
  async noteHead(scope: TenantScope, state: WalletState, announcedSeq?: number): Promise<void> {
    await this.heads.upsert(scope, {
      $max: { seq: state.seq, ...(announcedSeq !== undefined && { announcedSeq }) },
      $set: { holds: openHoldCount(state), updatedAt: state.updatedAt ?? new Date() },
    });
  }

  /** The sweeper has read the holds expiring up to `to` (it never goes back). */
  async noteHoldsSwept(scope: TenantScope, to: Date): Promise<void> {
    await this.heads.update(scope, { $max: { holdsSweptTo: to } });
  }

  /** These calls' holds and the rows or releases that may close them, up to `upTo`, chain order (decision 0137). */
  async callEntries(scope: TenantScope, callIds: readonly string[], upTo: number): Promise<CallEntry[]> {
    if (callIds.length === 0) return [];
    const docs = await this.entries.find(
      scope,
      { callId: { $in: [...callIds] }, seq: { $lte: upTo } },
      { projection: { seq: 1, kind: 1, callId: 1, change: 1 } },
    );
    return docs
      .map((d) => ({
        seq: d.seq,
        kind: d.kind,
        callId: d.callId!,
        ...(d.kind === 'hold' && d.change?.kind === 'hold' && { hold: d.change.hold }),
      }))
      .sort((a, b) => a.seq - b.seq);
  }

  /** Holds placed after `afterSeq` expiring in (`after`, `upTo`], earliest first; an instant never spans pages. */
  async *holdsExpiring(scope: TenantScope, after: Date, upTo: Date, afterSeq = 0): AsyncGenerator<Hold[]> {
    const read = (filter: Record<string, unknown>, limit?: number) =>
      this.entries.find(
        scope,
        { kind: 'hold', expiresAt: filter },
        { sort: { expiresAt: 1 }, ...(limit && { limit }), projection: { seq: 1, expiresAt: 1, change: 1 } },
      );
    const holdsOf = (docs: EntryDoc[]) =>
      docs.flatMap((d) => (d.change?.kind === 'hold' && d.seq > afterSeq ? [d.change.hold] : []));
    for (let from = after; ;) {
      const page = await read({ $gt: from, $lte: upTo }, HOLDS_PAGE);
      if (page.length < HOLDS_PAGE) {
        yield holdsOf(page);
        return;
      }
      // The page's last instant may go on past it: those holds come whole in the next read.
      const last = page.at(-1)!.expiresAt!;
      const before = page.filter((d) => d.expiresAt!.getTime() < last.getTime());
      yield holdsOf(before.length > 0 ? before : await read({ $gte: last, $lte: last }));
      from = before.length > 0 ? before.at(-1)!.expiresAt! : last;
    }
  }

  /** Entries after `from` up to `to` are announced, if everything up to `from` was. */
  async noteAnnounced(scope: TenantScope, from: number, to: number): Promise<void> {
    await this.heads.update(scope, { $set: { announcedSeq: to } }, { announcedSeq: from });
  }

  /** Entries from `from` to `to` (inclusive), in order, as appended. */
  async entriesBetween(scope: TenantScope, from: number, to: number): Promise<Entry[]> {
    const out: Entry[] = [];
    for (let seq = from; seq <= to; seq++) {
      const doc = await this.entryAt(scope, seq);
      if (!doc) break;
      const change: EntryChange =
        doc.kind === 'ledger'
          ? {
              kind: 'ledger',
              rowId: doc.rowId!,
              type: doc.type!,
              amount: doc.amount!,
              reference: doc.reference!,
              description: doc.description ?? '',
              ...(doc.callId ? { callId: doc.callId } : {}),
              ...(doc.call ? { call: doc.call } : {}),
            }
          : doc.change!;
      out.push({ change, state: doc.state });
    }
    return out;
  }

  /** Every tenant's head hint, read in pages along the primary key. */
  async headHints(): Promise<Head[]> {
    const out: Head[] = [];
    for await (const page of this.heads.pagesAcrossTenants(
      'the sweeper looks at every wallet for expired holds and unannounced entries',
      HEAD_PAGE,
    )) {
      out.push(
        ...page.map((d) => ({
          tenantId: d._id,
          seq: d.seq,
          announcedSeq: d.announcedSeq ?? 0,
          holds: d.holds ?? 0,
          ...(d.holdsSweptTo && { holdsSweptTo: d.holdsSweptTo }),
        })),
      );
    }
    return out;
  }

  /** Wallets whose head hint was noted at or after `since`, earliest first (hints follow appends within a second). */
  async headsChangedSince(since: Date, limit: number): Promise<ChangedHead[]> {
    const docs = await this.heads.changedAcrossTenants(
      'the ledger audit checks the wallets that changed since its last pass',
      'updatedAt',
      since,
      limit,
    );
    return docs.map((d) => ({ tenantId: d._id, seq: d.seq, updatedAt: d.updatedAt }));
  }

  /** The ledger rows of entries in (`after`, `upTo`], chain order, `ROWS_WINDOW` entries a page: the audit's input. */
  async *rowsBetween(scope: TenantScope, after: number, upTo: number): AsyncGenerator<RowFigures[]> {
    for (let from = after; from < upTo; from += ROWS_WINDOW) {
      const docs = await this.entries.find(
        scope,
        { kind: 'ledger', seq: { $gt: from, $lte: Math.min(upTo, from + ROWS_WINDOW) } },
        { sort: NEWEST_FIRST, projection: { seq: 1, amount: 1, balanceAfter: 1 } },
      );
      yield docs
        .reverse()
        .map((d) => ({ seq: d.seq, amount: d.amount ?? 0, balanceAfter: d.balanceAfter ?? Number.NaN }));
    }
  }

  /** The seq where each of these references was posted, if it was; sees every entry up to a head read before. */
  async posted(scope: TenantScope, refs: readonly string[]): Promise<Map<string, number>> {
    const found = new Map<string, number>();
    if (refs.length === 0) return found;
    for (const doc of await this.entries.find(
      scope,
      { reference: { $in: [...refs] } },
      { projection: { reference: 1, seq: 1 } },
    )) {
      const seen = found.get(doc.reference!);
      if (seen === undefined || doc.seq < seen) found.set(doc.reference!, doc.seq);
    }
    return found;
  }

  async rowAt(scope: TenantScope, seq: number): Promise<LedgerRow | undefined> {
    const doc = await this.entryAt(scope, seq);
    return doc && doc.kind === 'ledger' ? toRow(doc) : undefined;
  }

  /** A page of ledger rows up to `maxSeq` (the head the caller read), newest first. */
  async listRows(
    scope: TenantScope,
    opts: { type?: TransactionType; page: number; limit: number; maxSeq: number },
  ): Promise<LedgerRow[]> {
    const docs = await this.entries.find(
      scope,
      { kind: 'ledger', ...(opts.type && { type: opts.type }), seq: { $lte: opts.maxSeq } },
      { sort: NEWEST_FIRST, skip: (opts.page - 1) * opts.limit, limit: opts.limit, projection: { state: 0 } },
    );
    return docs.map(toRow);
  }
}

function toRow(doc: EntryDoc): LedgerRow {
  return {
    id: doc.rowId!,
    seq: doc.seq,
    type: doc.type!,
    amount: doc.amount!,
    balanceAfter: doc.balanceAfter!,
    ...(doc.callId !== undefined && doc.callId !== null && { callId: doc.callId }),
    ...(doc.call && { call: doc.call }),
    reference: doc.reference!,
    description: doc.description ?? '',
    createdAt: doc.createdAt,
  };
}
