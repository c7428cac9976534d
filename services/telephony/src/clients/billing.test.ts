import { commonReasons, defineReasons, grpcStatus } from '@voiceapi/kit/errors';
import { requireTenant } from '@voiceapi/kit/grpc';
import { voiceapi } from '@voiceapi/proto';
import type { Call } from '../domain/call';
import { billingWallet } from './billing';

const billingReasons = defineReasons('billing.voiceapi', { insufficient_credits: grpcStatus.FAILED_PRECONDITION });
const scope = requireTenant({ tenantId: 't-1', keyMode: 'live' });
const other = requireTenant({ tenantId: 't-2', keyMode: 'live' });
const { CallDirection } = voiceapi.billing.v1;
type HoldReq = voiceapi.billing.v1.PlaceCallHoldsRequest;
type SettleReq = voiceapi.billing.v1.SettleCallsRequest;

/** Billing as telephony reaches it: holds placed while each tenant's `credit` covers them, calls charged 2 a started minute. */
function fakeBilling(opts: { credit?: number; fail?: Error; debit?: Error } = {}) {
  const calls: { method: string; req: unknown; tenantId: string }[] = [];
  const credit = new Map<string, number>();
  const client = {
    placeCallHolds: (req: HoldReq, ctx: { tenantId: string }) => {
      calls.push({ method: 'placeCallHolds', req, tenantId: ctx.tenantId });
      if (opts.fail) return Promise.reject(opts.fail);
      const holds = req.holds.map((h) => {
        const amount = Math.ceil(h.maxCallSeconds / 60) * 2;
        const left = credit.get(ctx.tenantId) ?? opts.credit ?? 1_000;
        const placed = amount <= left;
        credit.set(ctx.tenantId, placed ? left - amount : left);
        return { callId: h.callId, placed, amount };
      });
      return Promise.resolve({ holds });
    },
    settleCalls: (req: SettleReq, ctx: { tenantId: string }) => {
      calls.push({ method: 'settleCalls', req, tenantId: ctx.tenantId });
      if (opts.fail) return Promise.reject(opts.fail);
      const billTime = new Date('2026-11-28T10:00:00Z');
      return Promise.resolve({
        settlements: req.calls.map((c) => ({
          callId: c.callId,
          billingStatus: 'charged',
          creditsCharged: Math.ceil(c.durationSeconds / 60) * 2,
          transactionId: `tx-${c.callId}`,
          ledgerSeq: 9,
          balanceAfter: 90,
          billTime,
        })),
      });
    },
    debit: (req: unknown, ctx: { tenantId: string }) => {
      calls.push({ method: 'debit', req, tenantId: ctx.tenantId });
      return opts.debit
        ? Promise.reject(opts.debit)
        : Promise.resolve({ transaction: { amount: -25, balanceAfter: 75 } });
    },
  };
  return { client: client as unknown as Parameters<typeof billingWallet>[0], calls };
}

const ended = (id: string, tenantId = 't-1'): Call => ({
  id,
  tenantId,
  direction: 'outbound',
  status: 'completed',
  outcome: 'completed',
  fromNumber: '+18885550100',
  toNumber: '+14155550123',
  contactId: 'ct-1',
  startedAt: new Date('2026-11-28T09:58:00Z'),
  endedAt: new Date('2026-11-28T09:59:01Z'),
  durationSeconds: 61,
  maxCallSeconds: 600,
  sandbox: false,
  holdFailed: false,
  billingStatus: 'pending',
  hasTranscript: false,
  hasAnalysis: false,
  hasRecording: false,
});

describe("telephony's billing wallet", () => {
  const expiresAt = new Date('2026-11-25T12:00:00Z');

  it('places the holds asked together in one request per tenant; billing prices them and says which it could cover', async () => {
    const { client, calls } = fakeBilling({ credit: 45 });
    const wallet = billingWallet(client);
    const answers = await Promise.all([
      wallet.placeHold(scope, 'call-1', 'outbound', 600, expiresAt),
      wallet.placeHold(scope, 'call-2', 'outbound', 600, expiresAt),
      wallet.placeHold(scope, 'call-3', 'outbound', 600, expiresAt),
      wallet.placeHold(other, 'call-4', 'inbound', 240, expiresAt),
    ]);
    expect(answers).toEqual(['placed', 'placed', 'insufficient', 'placed']);
    expect(calls.map((c) => [c.method, c.tenantId])).toEqual([
      ['placeCallHolds', 't-1'],
      ['placeCallHolds', 't-2'],
    ]);
    expect((calls[0]!.req as HoldReq).holds[0]).toEqual({
      callId: 'call-1',
      direction: CallDirection.CALL_DIRECTION_OUTBOUND,
      maxCallSeconds: 600,
      expireTime: expiresAt,
    });
  });

  it('settles the calls that end together in one request per tenant, each answered its own charge', async () => {
    const { client, calls } = fakeBilling();
    const wallet = billingWallet(client);
    const [a, b] = await Promise.all([
      wallet.settle(scope, ended('call-1')),
      wallet.settle(scope, { ...ended('call-2'), durationSeconds: 125 }),
    ]);
    expect(a).toMatchObject({
      billingStatus: 'charged',
      creditsCharged: 4,
      transactionId: 'tx-call-1',
      ledgerSeq: 9,
      balanceAfter: 90,
    });
    expect(b).toMatchObject({ creditsCharged: 6, transactionId: 'tx-call-2' });
    expect(calls.map((c) => c.method)).toEqual(['settleCalls']);
    expect((calls[0]!.req as SettleReq).calls[0]).toMatchObject({
      callId: 'call-1',
      direction: CallDirection.CALL_DIRECTION_OUTBOUND,
      durationSeconds: 61,
      holdFailed: false,
      contactId: 'ct-1',
      fromNumber: '+18885550100',
    });
  });

  it('passes on a failure to every call of the request; a number purchase refused is insufficient', async () => {
    const away = commonReasons.error('service_unavailable', 'away');
    const wallet = billingWallet(fakeBilling({ fail: away }).client);
    await expect(wallet.placeHold(scope, 'call-1', 'outbound', 60, expiresAt)).rejects.toBe(away);
    await expect(
      Promise.all([wallet.settle(scope, ended('call-1')), wallet.settle(scope, ended('call-2'))]),
    ).rejects.toBe(away);
    expect(
      await billingWallet(
        fakeBilling({ debit: billingReasons.error('insufficient_credits', 'no') }).client,
      ).debitNumber(scope, 'number:1', 25, 'Number'),
    ).toBe('insufficient');
  });

  it('reports what a number purchase charged and the balance after', async () => {
    const { client } = fakeBilling();
    expect(await billingWallet(client).debitNumber(scope, 'number:1', 25, 'Number')).toEqual({
      creditsCharged: 25,
      balanceAfter: 75,
    });
  });
});
