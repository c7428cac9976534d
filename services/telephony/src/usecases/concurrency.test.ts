import { DomainError } from '@voiceapi/kit/errors';
import { requireTenant } from '@voiceapi/kit/grpc';
import type { TenantSettingsStore } from '../store/tenant-settings-store';
import { Concurrency, MAX_LINES } from './concurrency';

const scope = requireTenant({ tenantId: 't1', keyMode: 'live' });
const NOW = new Date('2026-11-25T10:00:00Z');

describe('Concurrency', () => {
  it('sets the tenant’s package, and refuses what is not 1 to 1000 whole lines before writing', async () => {
    const writes: unknown[][] = [];
    const settings = {
      setMaxConcurrentCalls: async (...args: unknown[]) => (writes.push(args), args[1] as number),
    } as unknown as TenantSettingsStore;
    const uc = new Concurrency(settings, () => NOW);
    expect(await uc.set(scope, 10)).toBe(10);
    for (const bad of [0, -1, 2.5, MAX_LINES + 1, Number.NaN]) {
      const e = await uc.set(scope, bad).catch((err: unknown) => err);
      expect(e instanceof DomainError && e.reasonCode === 'validation_error' && e.details?.[0]?.path).toBe(
        'maxConcurrentCalls',
      );
    }
    expect(writes).toEqual([[scope, 10, NOW]]);
  });
});
