import { commonReasons } from '@voiceapi/kit/errors';
import { requireTenant } from '@voiceapi/kit/grpc';
import { CreditView } from './credit-check';
import type { HoldQuote } from './ports';

describe('CreditView', () => {
  const scope = requireTenant({ tenantId: 't1', keyMode: 'live' });
  const billingAway: HoldQuote = async () => {
    throw commonReasons.error('service_unavailable', 'billing is restarting');
  };

  it('accepts from the view without asking billing while the credit covers the call', async () => {
    let asked = 0;
    const view = new CreditView(
      async () => (asked++, { covered: true, state: { seq: 1, longestOutboundCallSeconds: 600 } }),
    );
    view.seen('t1', { seq: 5, longestOutboundCallSeconds: 1_200 });
    expect(await view.coversOneCall(scope, 600)).toBe(true);
    expect(await view.coversOneCall(scope, 1_200)).toBe(true);
    expect(asked).toBe(0);
  });

  it('asks billing when the view does not cover the call (a top-up may not have reached it) and keeps the answer', async () => {
    let asked = 0;
    const view = new CreditView(
      async () => (asked++, { covered: true, state: { seq: 9, longestOutboundCallSeconds: 3_000 } }),
    );
    view.seen('t1', { seq: 5, longestOutboundCallSeconds: 60 });
    expect(await view.coversOneCall(scope, 600)).toBe(true);
    expect(await view.coversOneCall(scope, 600)).toBe(true);
    expect(asked).toBe(1);
  });

  it('refuses as billing says, and from the view alone while billing is away', async () => {
    const refusing = new CreditView(async () => ({ covered: false, state: { seq: 3, longestOutboundCallSeconds: 0 } }));
    expect(await refusing.coversOneCall(scope, 60)).toBe(false);
    const view = new CreditView(billingAway);
    view.seen('t1', { seq: 5, longestOutboundCallSeconds: 60 });
    expect(await view.coversOneCall(scope, 600)).toBe(false);
    expect(await view.coversOneCall(scope, 60)).toBe(true);
  });

  it("answers billing's failure when it knows nothing of the tenant and billing is away", async () => {
    await expect(new CreditView(billingAway).coversOneCall(scope, 60)).rejects.toMatchObject({
      reasonCode: 'service_unavailable',
    });
  });

  it('keeps the newest state it heard of, whatever order announcements and answers arrive in', async () => {
    const view = new CreditView(billingAway);
    view.seen('t1', { seq: 7, longestOutboundCallSeconds: 0 });
    view.seen('t1', { seq: 6, longestOutboundCallSeconds: 6_000 }); // older: ignored
    expect(await view.coversOneCall(scope, 60)).toBe(false);
    view.seen('t1', { seq: 8, longestOutboundCallSeconds: 6_000 }); // a top-up
    expect(await view.coversOneCall(scope, 60)).toBe(true);
    await expect(view.coversOneCall(requireTenant({ tenantId: 't2', keyMode: 'live' }), 60)).rejects.toMatchObject({
      reasonCode: 'service_unavailable',
    });
  });
});
