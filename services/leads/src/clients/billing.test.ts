import { contextOf, requireTenant } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import { billingHoldQuote } from './billing';

describe("leads' billing client", () => {
  it("asks billing for an outbound call's hold as the caller, and reads the wallet's available credit", async () => {
    const asked: unknown[] = [];
    const quote = billingHoldQuote({
      quoteCallHold: async (req: unknown, ctx: unknown) => (asked.push([req, ctx]), { amount: 8, covered: true, balance: { available: 950 } }),
    } as never);
    const scope = requireTenant({ tenantId: 't-1', keyMode: 'live' });
    expect(await quote(scope, 240)).toEqual({ amount: 8, available: 950, covered: true });
    expect(asked).toEqual([[{ direction: voiceapi.billing.v1.CallDirection.CALL_DIRECTION_OUTBOUND, maxCallSeconds: 240 }, contextOf(scope)]]);
  });

  it('reads a wallet without a balance as none available', async () => {
    const quote = billingHoldQuote({ quoteCallHold: async () => ({ amount: 8, covered: false }) });
    expect(await quote(requireTenant({ tenantId: 't-1', keyMode: 'live' }), 60)).toEqual({ amount: 8, available: 0, covered: false });
  });
});
