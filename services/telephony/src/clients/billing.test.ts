import { commonReasons, defineReasons, grpcStatus, requireTenant } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import { billingWallet } from './billing';

const billingReasons = defineReasons('billing.voiceapi', { insufficient_credits: grpcStatus.FAILED_PRECONDITION });
const scope = requireTenant({ tenantId: 't-1', keyMode: 'live' });
const { CallDirection } = voiceapi.billing.v1;

function fakeBilling(opts: { quote: number; hold?: Error; debit?: Error }) {
  const calls: { method: string; req: unknown; ctx: unknown }[] = [];
  const answer = (method: string, req: unknown, ctx: unknown, result: unknown, fail?: Error) => {
    calls.push({ method, req, ctx });
    return fail ? Promise.reject(fail) : Promise.resolve(result);
  };
  const client = {
    quoteCallHold: (req: unknown, ctx: unknown) => answer('quoteCallHold', req, ctx, { amount: opts.quote }),
    placeHold: (req: unknown, ctx: unknown) => answer('placeHold', req, ctx, {}, opts.hold),
    debit: (req: unknown, ctx: unknown) => answer('debit', req, ctx, { transaction: { amount: -25, balanceAfter: 75 } }, opts.debit),
  };
  return { client: client as unknown as Parameters<typeof billingWallet>[0], calls };
}

describe("telephony's billing wallet", () => {
  const expiresAt = new Date('2026-11-25T12:00:00Z');

  it("holds billing's quote for the call, on the tenant's behalf", async () => {
    const { client, calls } = fakeBilling({ quote: 8 });
    expect(await billingWallet(client).placeHold(scope, 'call-1', 'inbound', 240, expiresAt)).toBe('placed');
    expect(calls.map((c) => c.method)).toEqual(['quoteCallHold', 'placeHold']);
    expect(calls[1]!.req).toEqual({ callId: 'call-1', amount: 8, direction: CallDirection.CALL_DIRECTION_INBOUND, expireTime: expiresAt });
    expect(calls.every((c) => (c.ctx as { tenantId: string }).tenantId === 't-1')).toBe(true);
  });

  it('places no hold for a call that costs nothing', async () => {
    const { client, calls } = fakeBilling({ quote: 0 });
    expect(await billingWallet(client).placeHold(scope, 'call-1', 'outbound', 60, expiresAt)).toBe('placed');
    expect(calls.map((c) => c.method)).toEqual(['quoteCallHold']);
  });

  it("answers billing's refusal as insufficient, and passes on any other failure", async () => {
    const refused = fakeBilling({ quote: 8, hold: billingReasons.error('insufficient_credits', 'no'), debit: billingReasons.error('insufficient_credits', 'no') });
    expect(await billingWallet(refused.client).placeHold(scope, 'call-1', 'outbound', 60, expiresAt)).toBe('insufficient');
    expect(await billingWallet(refused.client).debitNumber(scope, 'number:1', 25, 'Number')).toBe('insufficient');
    const away = commonReasons.error('service_unavailable', 'away');
    await expect(billingWallet(fakeBilling({ quote: 8, hold: away }).client).placeHold(scope, 'call-1', 'outbound', 60, expiresAt)).rejects.toBe(away);
  });

  it('reports what a number purchase charged and the balance after', async () => {
    const { client } = fakeBilling({ quote: 0 });
    expect(await billingWallet(client).debitNumber(scope, 'number:1', 25, 'Number')).toEqual({ creditsCharged: 25, balanceAfter: 75 });
  });
});
