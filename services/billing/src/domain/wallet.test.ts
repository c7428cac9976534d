import { stateProblems } from '../../test/invariants';
import { apply, callCharge, EMPTY_WALLET, longestCallCovered, postedReference } from './wallet';
import { plan, type WalletOp } from './wallet-ops';

const at = new Date('2026-11-22T10:00:00Z');
const none = { posted: new Map<string, number>(), open: new Map() };

describe('wallet arithmetic', () => {
  it('charges each started minute at the rate, and nothing for 0 s', () => {
    expect([0, 1, 60, 61, 125].map((s) => callCharge(s, 2))).toEqual([0, 2, 2, 4, 6]);
  });

  it('plans a batch in order against one head: debits only against what is available', () => {
    const ops: WalletOp[] = [
      { kind: 'topUp', reference: 't1', amount: 10, description: 'Top-up' },
      { kind: 'hold', callId: 'c1', amount: 6, direction: 'outbound', expiresAt: new Date(at.getTime() + 60_000) },
      { kind: 'debit', reference: 'd1', amount: 5, type: 'adjustment', description: '' },
      { kind: 'debit', reference: 'd2', amount: 4, type: 'adjustment', description: '' },
      { kind: 'debit', reference: 'd2', amount: 4, type: 'adjustment', description: '' },
      { kind: 'capture', callId: 'c1', amount: 8, description: 'call' },
    ];
    const { entries, decisions } = plan(EMPTY_WALLET, ops, none, at);
    // top-up, hold, d2 (d1 is refused: 4 available), capture; the second d2 replays the first.
    expect(entries.map((e) => e.change.kind)).toEqual(['ledger', 'hold', 'ledger', 'ledger']);
    expect('error' in decisions[2]! && decisions[2].error.message).toMatch(/cannot cover 5/);
    expect(decisions[4]).toEqual({ replaySeq: 3, op: ops[4] });
    const last = entries[entries.length - 1]!.state;
    // The capture takes the hold (6) and the 0 left available: 6 of 8, never below zero.
    expect(last).toMatchObject({ balance: 0, held: 0, openHolds: 0 });
    expect(last.holds).toBeUndefined();
    expect(decisions[5]).toMatchObject({ result: { shortfall: 2 } });
    for (const e of entries) expect(stateProblems(e.state)).toEqual([]);
  });

  it('a final release posts the call reference, so a later capture charges nothing', () => {
    const held = apply(
      apply(
        EMPTY_WALLET,
        { kind: 'ledger', rowId: 'r', type: 'top_up', amount: 10, reference: 't', description: '' },
        at,
      ),
      { kind: 'hold', hold: { callId: 'c', amount: 4, direction: 'inbound', createdAt: at, expiresAt: at } },
      at,
    );
    const capture: WalletOp = { kind: 'capture', callId: 'c', amount: 2, description: '' };
    // In the same batch: the capture replays the release planned before it.
    const open = new Map([
      ['c', { callId: 'c', amount: 4, direction: 'inbound' as const, createdAt: at, expiresAt: at }],
    ]);
    const { entries, decisions } = plan(
      held,
      [{ kind: 'release', callId: 'c', final: true }, capture],
      { posted: none.posted, open },
      at,
    );
    expect(entries).toHaveLength(1);
    const after = entries[0]!.state;
    expect(after).toMatchObject({ held: 0, balance: 10 });
    expect(postedReference(entries[0]!.change)).toBe('call:c');
    expect(decisions[1]).toEqual({ replaySeq: after.seq, op: capture });
    // In a later batch: the chain's lookup says where the reference was posted.
    expect(
      plan(after, [capture], { posted: new Map([['call:c', after.seq]]), open: none.open }, at).decisions[0],
    ).toEqual({
      replaySeq: after.seq,
      op: capture,
    });
    // A hold placed or a hold released without `final` posts nothing.
    expect(postedReference({ kind: 'release', callId: 'c' })).toBeUndefined();
  });
});

describe('fixed-size entries (decision 0137)', () => {
  const expiresAt = new Date(at.getTime() + 60_000);
  const ops: WalletOp[] = [
    { kind: 'topUp', reference: 't1', amount: 100, description: 'Top-up' },
    { kind: 'hold', callId: 'a', amount: 10, direction: 'outbound', expiresAt },
    { kind: 'hold', callId: 'b', amount: 20, direction: 'outbound', expiresAt },
    { kind: 'hold', callId: 'a', amount: 10, direction: 'outbound', expiresAt },
    { kind: 'capture', callId: 'a', amount: 4, description: 'call' },
    { kind: 'release', callId: 'b' },
    { kind: 'release', callId: 'b' },
  ];

  it('a closing entry names the credits it released, and the figures follow from them alone', () => {
    const { entries, decisions } = plan(EMPTY_WALLET, ops, none, at);
    expect(decisions[3]).toMatchObject({ done: { replayed: true, hold: { callId: 'a', amount: 10 } } });
    expect(decisions[6]).toEqual({ done: { replayed: false, released: false } });
    expect(entries.map((e) => e.change)).toMatchObject([
      { kind: 'ledger' },
      { kind: 'hold' },
      { kind: 'hold' },
      { kind: 'ledger', callId: 'a', amount: -4, released: 10 },
      { kind: 'release', callId: 'b', released: 20 },
    ]);
    expect(entries.map((e) => [e.state.held, e.state.openHolds])).toEqual([
      [0, 0],
      [10, 1],
      [30, 2],
      [20, 1],
      [0, 0],
    ]);
    for (const e of entries) expect(e.state.holds).toBeUndefined();
  });

  it('compat lists the open holds as billing 1.2 reads them; fixed after a list names it for good', () => {
    const listed = plan(EMPTY_WALLET, ops.slice(0, 3), none, at, 'compat').entries.at(-1)!.state;
    expect(listed.holds?.map((h) => h.callId)).toEqual(['a', 'b']);
    // Planned in fixed from a listing head, with its list as the open holds.
    const open = new Map(listed.holds!.map((h) => [h.callId, h]));
    const { entries } = plan(listed, ops.slice(4), { posted: none.posted, open }, at);
    expect(entries.map((e) => [e.state.held, e.state.listedUpTo, e.state.holds])).toEqual([
      [20, listed.seq, undefined],
      [0, listed.seq, undefined],
    ]);
    for (const e of entries) expect(stateProblems(e.state)).toEqual([]);
  });
});

describe('longestCallCovered', () => {
  it('is the longest call whose per-started-minute hold the credit pays, within a day', () => {
    expect(longestCallCovered(0, 10)).toBe(0);
    expect(longestCallCovered(9, 10)).toBe(0);
    expect(longestCallCovered(25, 10)).toBe(120);
    expect(callCharge(longestCallCovered(25, 10), 10)).toBeLessThanOrEqual(25);
    expect(callCharge(longestCallCovered(25, 10) + 1, 10)).toBeGreaterThan(25);
    expect(longestCallCovered(10 ** 9, 10)).toBe(86_400);
    expect(longestCallCovered(0, 0)).toBe(86_400);
  });
});
