import { contextOf, requireTenant } from '@voiceapi/kit/grpc';
import { voiceapi } from '@voiceapi/proto';
import { billingHoldQuote } from './billing';

describe("leads' billing client", () => {
  it("asks billing for an outbound call's hold as the caller, without waiting for billing to be up, and reads the wallet's credit", async () => {
    const asked: unknown[] = [];
    const quote = billingHoldQuote({
      quoteCallHold: async (req: unknown, ctx: unknown, opts: unknown) => (
        asked.push([req, ctx, opts]),
        { amount: 8, covered: true, longestCoveredSeconds: 7_080, balance: { available: 950, seq: 12 } }
      ),
    } as never);
    const scope = requireTenant({ tenantId: 't-1', keyMode: 'live' });
    expect(await quote(scope, 240)).toEqual({ covered: true, state: { seq: 12, longestOutboundCallSeconds: 7_080 } });
    expect(asked).toEqual([
      [
        { direction: voiceapi.billing.v1.CallDirection.CALL_DIRECTION_OUTBOUND, maxCallSeconds: 240 },
        contextOf(scope),
        { timeoutMs: 1_000, waitForReady: false },
      ],
    ]);
  });

  it('reads a wallet without a balance as one that never changed', async () => {
    const quote = billingHoldQuote({
      quoteCallHold: async () => ({ amount: 8, covered: false, longestCoveredSeconds: 0 }),
    });
    expect(await quote(requireTenant({ tenantId: 't-1', keyMode: 'live' }), 60)).toEqual({
      covered: false,
      state: { seq: 0, longestOutboundCallSeconds: 0 },
    });
  });
});
