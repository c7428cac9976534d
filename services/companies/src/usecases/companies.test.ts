import { DomainError } from '@voiceapi/kit';
import { Types } from 'mongoose';
import type { CompanyStore, CompanyView } from '../store/company-store';
import { CompanyUseCases } from './companies';

const NOW = new Date('2026-01-02T03:04:05Z');
const view = (over: Partial<CompanyView> = {}): CompanyView => ({
  _id: new Types.ObjectId(),
  tenantId: 't1',
  name: 'Clinic',
  createdAt: NOW,
  updatedAt: NOW,
  ...over,
});

// A recording stand-in for the store: these specs are about the use case's own rules; the store
// itself is exercised against a real server in test/companies.int.test.ts.
function recordingStore() {
  const calls: { method: string; args: unknown[] }[] = [];
  const store = new Proxy({} as CompanyStore, {
    get: (_t, method: string) => async (...args: unknown[]) => {
      calls.push({ method, args });
      if (method === 'list') return { items: [view()], total: 1 };
      if (method === 'delete') return false;
      if (method === 'get' || method === 'update') return null;
      return view(args[1] as Partial<CompanyView>);
    },
  });
  return { store, calls };
}

const ctx = { tenantId: 't1', keyMode: 'live' as const };
const reasonOf = async (p: Promise<unknown>) => ((await p.then(() => undefined, (e: unknown) => e)) as DomainError).reasonCode;

describe('CompanyUseCases', () => {
  it('passes on only the fields that were sent', async () => {
    const { store, calls } = recordingStore();
    await new CompanyUseCases(store, () => NOW).update(ctx, new Types.ObjectId().toString(), { industry: 'health' }).catch(() => undefined);
    expect(calls[0]!.args[2]).toEqual({ industry: 'health' });
  });

  it('requires a non-empty name on create and refuses to blank it on update', async () => {
    const { store, calls } = recordingStore();
    const uc = new CompanyUseCases(store, () => NOW);
    expect(await reasonOf(uc.create(ctx, {}))).toBe('validation_error');
    expect(await reasonOf(uc.update(ctx, 'x', { name: '  ' }))).toBe('validation_error');
    expect(calls).toHaveLength(0);
  });

  it('refuses calls without a tenant before touching the store', async () => {
    const { store, calls } = recordingStore();
    expect(await reasonOf(new CompanyUseCases(store).list({}, 1, 25))).toBe('unauthorized');
    expect(calls).toHaveLength(0);
  });

  it('clamps paging defensively', async () => {
    const { store, calls } = recordingStore();
    await new CompanyUseCases(store).list(ctx, 0, 1_000);
    expect(calls[0]!.args.slice(1)).toEqual([1, 100]);
  });

  it('reports absent companies as not_found', async () => {
    const { store } = recordingStore();
    const uc = new CompanyUseCases(store);
    expect(await reasonOf(uc.get(ctx, 'x'))).toBe('not_found');
    expect(await reasonOf(uc.delete(ctx, 'x'))).toBe('not_found');
  });

  it('maps records to the wire shape with timestamps', async () => {
    const { store } = recordingStore();
    const created = await new CompanyUseCases(store, () => NOW).create(ctx, { name: 'Sunrise', countryIso: 'US' });
    expect(created).toMatchObject({ name: 'Sunrise', countryIso: 'US', createTime: NOW, updateTime: NOW });
    expect(created.id).toMatch(/^[a-f0-9]{24}$/);
  });
});
