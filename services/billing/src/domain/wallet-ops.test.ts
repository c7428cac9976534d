import { EMPTY_WALLET, type LedgerRow } from './wallet';
import { replayResult } from './wallet-ops';

const row: LedgerRow = {
  id: 'r1',
  seq: 3,
  type: 'adjustment',
  amount: -5,
  balanceAfter: 5,
  reference: 'd1',
  description: '',
  createdAt: new Date('2026-11-22T10:00:00Z'),
};

describe('a replayed wallet op', () => {
  it('answers the row its reference posted when it asks for the same thing', () => {
    const r = replayResult(
      { kind: 'debit', reference: 'd1', amount: 5, type: 'adjustment', description: '' },
      { row },
      EMPTY_WALLET,
    );
    expect(r).toEqual({ state: EMPTY_WALLET, row, replayed: true });
  });

  it('refuses a reference posted before with another amount or type', () => {
    expect(() =>
      replayResult(
        { kind: 'debit', reference: 'd1', amount: 6, type: 'adjustment', description: '' },
        { row },
        EMPTY_WALLET,
      ),
    ).toThrow(/another amount or type/);
    expect(() =>
      replayResult({ kind: 'topUp', reference: 'd1', amount: 5, description: '' }, { row }, EMPTY_WALLET),
    ).toThrow(/another amount or type/);
  });

  it('answers a capture of a call settled without a charge with the release reason and nothing charged', () => {
    const r = replayResult(
      { kind: 'capture', callId: 'c1', amount: 4, description: 'call' },
      { releaseReason: 'insufficient_credits' },
      EMPTY_WALLET,
    );
    expect(r).toEqual({
      state: EMPTY_WALLET,
      replayed: true,
      settledWithoutCharge: 'insufficient_credits',
      shortfall: 0,
    });
  });

  it('refuses a hold for a call already charged, and a debit naming a call settled without a charge', () => {
    const charged: LedgerRow = { ...row, type: 'call_deduction', reference: 'call:c1', callId: 'c1' };
    expect(() =>
      replayResult(
        { kind: 'hold', callId: 'c1', amount: 2, direction: 'outbound', expiresAt: new Date() },
        { row: charged },
        EMPTY_WALLET,
      ),
    ).toThrow(/charged already/);
    expect(() =>
      replayResult(
        { kind: 'topUp', reference: 'call:c1', amount: 1, description: '' },
        { releaseReason: 'skipped' },
        EMPTY_WALLET,
      ),
    ).toThrow(/settled without a charge/);
  });
});
