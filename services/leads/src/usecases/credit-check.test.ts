import { requireTenant } from '@voiceapi/kit';
import { QuotedCreditCheck } from './credit-check';

describe('QuotedCreditCheck', () => {
  const scope = requireTenant({ tenantId: 't1', keyMode: 'live' });

  it('asks billing every time while the wallet is not far above one hold', async () => {
    let calls = 0;
    const check = new QuotedCreditCheck(async () => (calls++, { amount: 20, available: 25, covered: true }), () => 0);
    expect(await check.coversOneCall(scope, 600)).toBe(true);
    expect(await check.coversOneCall(scope, 600)).toBe(true);
    expect(calls).toBe(2);
  });

  it('refuses as billing says', async () => {
    const check = new QuotedCreditCheck(async () => ({ amount: 20, available: 5, covered: false }));
    expect(await check.coversOneCall(scope, 600)).toBe(false);
  });

  it('remembers an ample wallet for a second, per tenant and call length', async () => {
    let now = 1_000;
    let calls = 0;
    let available = 10_000;
    const check = new QuotedCreditCheck(async () => (calls++, { amount: 20, available, covered: available >= 20 }), () => now);
    await check.coversOneCall(scope, 600);
    await check.coversOneCall(scope, 600);
    expect(calls).toBe(1);
    await check.coversOneCall(requireTenant({ tenantId: 't2', keyMode: 'live' }), 600);
    await check.coversOneCall(scope, 60);
    expect(calls).toBe(3);
    // A second later the wallet is asked again, and an emptied wallet is refused at once.
    now += 1_001;
    available = 0;
    expect(await check.coversOneCall(scope, 600)).toBe(false);
    expect(calls).toBe(4);
  });
});
