import { voiceapi } from '@voiceapi/proto';
import { balanceJson, listTransactionsRequest, topUpRequest, transactionJson } from './mappers';
import { Balance, TopUp, Transaction, TRANSACTION_TYPES } from './schemas';

const { TransactionType } = voiceapi.billing.v1;
const at = new Date('2026-11-22T09:30:00.000Z');
const row = (
  type: voiceapi.billing.v1.TransactionType,
  over: Partial<voiceapi.billing.v1.Transaction> = {},
): voiceapi.billing.v1.Transaction => ({
  id: 'tx-1',
  type,
  amount: -2,
  balanceAfter: 8,
  reference: 'ref',
  description: 'd',
  createTime: at,
  ...over,
});

describe('billing messages ↔ JSON', () => {
  it('maps every transaction type name to a distinct proto value and back', () => {
    const protos = TRANSACTION_TYPES.map((type) => listTransactionsRequest({ page: 1, limit: 25, type }).type);
    expect(new Set(protos).size).toBe(TRANSACTION_TYPES.length);
    expect(protos).not.toContain(TransactionType.TRANSACTION_TYPE_UNSPECIFIED);
    expect(protos.map((p) => transactionJson(row(p)).type)).toEqual([...TRANSACTION_TYPES]);
    // Every proto value but UNSPECIFIED has a name.
    const named = Object.values(TransactionType).filter((v): v is number => typeof v === 'number' && Number(v) > 0);
    expect([...protos].sort()).toEqual(named.sort());
  });

  it('refuses to guess a name for an unspecified or unknown type', () => {
    expect(() => transactionJson(row(TransactionType.TRANSACTION_TYPE_UNSPECIFIED))).toThrow(/unknown type/);
    expect(() => transactionJson(row(TransactionType.UNRECOGNIZED))).toThrow(/unknown type/);
    expect(() => transactionJson(undefined)).toThrow(/without a transaction/);
  });

  it('gives a row the documented shape: callId a string on call rows, null otherwise', () => {
    const call = transactionJson(row(TransactionType.TRANSACTION_TYPE_CALL_DEDUCTION, { callId: 'c1' }));
    expect(call).toEqual({
      id: 'tx-1',
      type: 'call_deduction',
      amount: -2,
      balanceAfter: 8,
      callId: 'c1',
      reference: 'ref',
      description: 'd',
      createdAt: '2026-11-22T09:30:00.000Z',
    });
    expect(Transaction.strict().safeParse(call).success).toBe(true);
    expect(transactionJson(row(TransactionType.TRANSACTION_TYPE_TOP_UP)).callId).toBeNull();
    expect(transactionJson(row(TransactionType.TRANSACTION_TYPE_TOP_UP, { callId: '' })).callId).toBeNull();
  });

  it('answers the balance with updatedAt, or null for a wallet that never changed', () => {
    expect(balanceJson({ balance: 10, available: 7, held: 3, seq: 2, updateTime: at })).toEqual({
      balance: 10,
      available: 7,
      held: 3,
      updatedAt: '2026-11-22T09:30:00.000Z',
    });
    const never = balanceJson({ balance: 0, available: 0, held: 0, seq: 0 });
    expect(never.updatedAt).toBeNull();
    expect(Balance.strict().safeParse(never).success).toBe(true);
    expect(() => balanceJson(undefined)).toThrow(/without a balance/);
  });

  it('asks for every type when no filter is given', () => {
    expect(listTransactionsRequest({ page: 3, limit: 10 })).toEqual({
      page: { page: 3, limit: 10 },
      type: TransactionType.TRANSACTION_TYPE_UNSPECIFIED,
    });
  });

  it('makes each top-up a new one: a fresh top_up:<uuid> reference, the note only when given', () => {
    const a = topUpRequest(TopUp.parse({ amount: 5, note: '  wire  ' }));
    const b = topUpRequest(TopUp.parse({ amount: 5 }));
    expect(a).toEqual({ amount: 5, note: 'wire', reference: expect.stringMatching(/^top_up:[0-9a-f-]{36}$/) });
    expect(b).toEqual({ amount: 5, reference: expect.stringMatching(/^top_up:[0-9a-f-]{36}$/) });
    expect(a.reference).not.toBe(b.reference);
  });
});
