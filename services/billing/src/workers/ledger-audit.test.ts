import type { TenantScope } from '@voiceapi/kit/grpc';
import type { Logger } from '@voiceapi/kit/service';
import { markOf, tally, tallyOf, type AuditMark } from '../domain/ledger-audit';
import { apply, EMPTY_WALLET, type EntryChange, type WalletState } from '../domain/wallet';
import { LedgerAudit, type LedgerAuditDeps } from './ledger-audit';

const log = () =>
  ({ warn: jest.fn(), info: jest.fn(), error: jest.fn(), debug: jest.fn() }) as unknown as Logger & {
    error: jest.Mock;
    warn: jest.Mock;
  };

describe('the audit arithmetic', () => {
  const rows = (...r: [number, number, number][]) =>
    r.map(([seq, amount, balanceAfter]) => ({ seq, amount, balanceAfter }));

  it("adds the new rows to what the earlier ones summed to, each against its balance after, and the newest entry's balance against the total", () => {
    const first = markOf(tally(tallyOf(undefined), rows([1, 100, 100], [3, -20, 80])), 4, 80);
    expect(first).toEqual({ seq: 4, rowsSum: 80, balance: 80, unbalanced: false });
    expect(markOf(tally(tallyOf(first), rows([5, -40, 40])), 5, 40)).toEqual({
      seq: 5,
      rowsSum: 40,
      balance: 40,
      unbalanced: false,
    });
    // An entry after the rows (a hold, a release) that moved the balance.
    expect(markOf(tally(tallyOf(first), rows([5, -40, 40])), 6, 45)).toEqual({
      seq: 6,
      rowsSum: 40,
      balance: 45,
      unbalanced: true,
      wrongAt: 6,
    });
  });

  it('finds a row whose balance after it is wrong even when a later one is right again, and keeps the finding', () => {
    const found = markOf(tally(tallyOf(undefined), rows([1, 100, 100], [2, -30, 75], [3, 10, 80])), 3, 80);
    expect(found).toEqual({ seq: 3, rowsSum: 80, balance: 80, unbalanced: true, wrongAt: 2 });
    expect(markOf(tally(tallyOf(found), rows([4, 5, 85])), 4, 85)).toEqual({
      seq: 4,
      rowsSum: 85,
      balance: 85,
      unbalanced: true,
      wrongAt: 2,
    });
  });
});

/** Wallet chains in memory, appended through the domain's own arithmetic, and the audit's marks. */
function ledger() {
  const chains = new Map<string, { change: EntryChange; state: WalletState }[]>();
  const hints = new Map<string, { seq: number; updatedAt: Date }>();
  const marks = new Map<string, AuditMark>();
  const reads = { rows: 0 };
  let clock = 1_000;
  const append = (tenantId: string, change: EntryChange, opts: { noteHint?: boolean; balanceOff?: number } = {}) => {
    const chain = chains.get(tenantId) ?? [];
    const prev = chain.at(-1)?.state ?? EMPTY_WALLET;
    const state = apply(prev, change, new Date(clock));
    // A fault: the entry's state carries a balance its row does not explain.
    chain.push({ change, state: { ...state, balance: state.balance + (opts.balanceOff ?? 0) } });
    chains.set(tenantId, chain);
    if (opts.noteHint !== false) hints.set(tenantId, { seq: state.seq, updatedAt: new Date(clock) });
    clock += 1_000;
  };
  const row = (amount: number, n: number): EntryChange => ({
    kind: 'ledger',
    rowId: `r${n}`,
    type: amount > 0 ? 'top_up' : 'adjustment',
    amount,
    reference: `ref:${n}`,
    description: '',
  });
  const store: LedgerAuditDeps['store'] = {
    headsChangedSince: async (since, limit) =>
      [...hints]
        .filter(([, h]) => h.updatedAt.getTime() >= since.getTime())
        .sort(([, a], [, b]) => a.updatedAt.getTime() - b.updatedAt.getTime())
        .slice(0, limit)
        .map(([tenantId, h]) => ({ tenantId, ...h })),
    entryAt: async (scope: TenantScope, seq: number) => {
      const e = chains.get(scope.tenantId)?.[seq - 1];
      return e ? ({ seq, state: e.state } as never) : null;
    },
    rowsBetween: async function* (scope: TenantScope, after: number, upTo: number) {
      reads.rows += upTo - after;
      yield (chains.get(scope.tenantId) ?? [])
        .slice(after, upTo)
        .flatMap((e) =>
          e.change.kind === 'ledger'
            ? [{ seq: e.state.seq, amount: e.change.amount, balanceAfter: e.state.balance }]
            : [],
        );
    },
  };
  const audits: LedgerAuditDeps['audits'] = {
    marks: async (ids) => new Map(ids.flatMap((id) => (marks.has(id) ? [[id, marks.get(id)!] as const] : []))),
    save: async (saved) => void saved.forEach(({ tenantId, mark }) => marks.set(tenantId, mark)),
  };
  const unbalanced = () => [...marks].filter(([, m]) => m.unbalanced).map(([id]) => id);
  return { append, row, store, audits, marks, reads, unbalanced, now: () => new Date(clock) };
}

describe('LedgerAudit', () => {
  it('finds the wallet whose balance is not what its ledger rows sum to, and only that one', async () => {
    const l = ledger();
    const hold: EntryChange = {
      kind: 'hold',
      hold: { callId: 'c1', amount: 10, direction: 'outbound', createdAt: new Date(0), expiresAt: new Date(0) },
    };
    l.append('sound', l.row(100, 1));
    l.append('sound', hold);
    l.append('sound', l.row(-4, 2));
    l.append('broken', l.row(50, 1));
    l.append('broken', l.row(-5, 2), { balanceOff: 5 }); // the balance moved by 0, its row by -5
    const counted: number[] = [];
    const errors = log();
    const audit = new LedgerAudit({ ...l, log: errors, audited: { add: (n) => counted.push(n) } });
    expect(await audit.pass()).toBe('done');
    expect(l.unbalanced()).toEqual(['broken']);
    expect(l.marks.get('broken')).toEqual({ seq: 2, rowsSum: 45, balance: 50, unbalanced: true, wrongAt: 2 });
    expect(l.marks.get('sound')).toEqual({ seq: 3, rowsSum: 96, balance: 96, unbalanced: false });
    expect(counted).toEqual([2]);
    expect(errors.error).toHaveBeenCalledWith(
      expect.objectContaining({ tenantId: 'broken', wrongAt: 2, balance: 50, rowsSum: 45, difference: 5 }),
      "a wallet's balance is not what its ledger rows sum to",
    );
  });

  it('checks only the entries each changed wallet appended since its last pass, and stays unbalanced once found', async () => {
    const l = ledger();
    l.append('a', l.row(100, 1));
    l.append('b', l.row(30, 1), { balanceOff: 1 });
    const audit = new LedgerAudit({ ...l, log: log() });
    await audit.pass();
    expect(l.reads.rows).toBe(2);
    // Nothing changed: nothing read but the changed heads.
    await audit.pass();
    expect(l.reads.rows).toBe(2);
    l.append('a', l.row(-10, 2));
    l.append('a', l.row(-10, 3));
    l.append('b', l.row(5, 2));
    await audit.pass();
    expect(l.reads.rows).toBe(5);
    expect(l.marks.get('a')).toEqual({ seq: 3, rowsSum: 80, balance: 80, unbalanced: false });
    expect(l.marks.get('b')).toEqual({ seq: 2, rowsSum: 35, balance: 36, unbalanced: true, wrongAt: 1 });
  });

  it('pages through many changed wallets, one page a pass, and a wallet it could not read is looked at again by the next sweep', async () => {
    const l = ledger();
    for (let i = 0; i < 501; i++) l.append(`t${i}`, l.row(1, 1));
    let failOnce = true;
    const entryAt = l.store.entryAt;
    l.store.entryAt = async (scope, seq) => {
      if (scope.tenantId === 't7' && failOnce) {
        failOnce = false;
        throw new Error('store away');
      }
      return entryAt(scope, seq);
    };
    const audit = new LedgerAudit({ ...l, log: log() });
    expect(await audit.pass()).toBe('more');
    expect(await audit.pass()).toBe('done');
    expect(l.marks.size).toBe(500);
    expect(l.marks.has('t7')).toBe(false);
    await audit.pass();
    expect(l.marks.size).toBe(501);
    expect(l.unbalanced()).toEqual([]);
  });
});
