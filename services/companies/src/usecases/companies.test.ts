import { DomainError } from '@voiceapi/kit';
import type { CompanyStore } from '../store/company-store';
import { CompanyUseCases, type CompanyEvents } from './companies';

const NOW = new Date('2026-01-02T03:04:05Z');

// The use cases' own rules: what they refuse before the store is touched, and what they pass on.
// The store itself runs against a real server in test/companies.int.test.ts.
function storeSpy() {
  const calls: { method: string; args: unknown[] }[] = [];
  const store = new Proxy({} as CompanyStore, {
    get: (_t, method: string) => async (...args: unknown[]) => {
      calls.push({ method, args });
      return method === 'list' ? { items: [], total: 0, hasMore: false } : method === 'delete' ? false : null;
    },
  });
  return { store, calls };
}

/** Records what was announced: held, then released or discarded. */
function eventsSpy() {
  const log: string[] = [];
  const events: CompanyEvents = {
    changed: async (_scope, id, change) => (log.push(`held ${id} ${change === 'deleted' ? 'deleted' : change.join(',')}`), [`e-${id}`]),
    release: async (ids) => void log.push(`released ${ids.join()}`),
    discard: async (ids) => void log.push(`discarded ${ids.join()}`),
  };
  return { events, log };
}

const ctx = { tenantId: 't1', keyMode: 'live' as const };
const reasonOf = async (p: Promise<unknown>) => ((await p.then(() => undefined, (e: unknown) => e)) as DomainError).reasonCode;

describe('CompanyUseCases', () => {
  it('passes on only the fields that were sent, with the time of the change', async () => {
    const { store, calls } = storeSpy();
    await new CompanyUseCases(store, eventsSpy().events, () => NOW).update(ctx, 'id', { industry: 'health' }).catch(() => undefined);
    expect(calls[0]!.args.slice(2)).toEqual([{ industry: 'health' }, NOW, []]);
  });

  it('refuses to set and remove the same field in one update', async () => {
    const { store, calls } = storeSpy();
    expect(await reasonOf(new CompanyUseCases(store, eventsSpy().events).update(ctx, 'id', { mobile: '+1 555 0100' }, ['mobile']))).toBe('validation_error');
    expect(calls).toHaveLength(0);
  });

  it('requires a non-empty name on create and refuses to blank it on update, before the store is touched', async () => {
    const { store, calls } = storeSpy();
    const uc = new CompanyUseCases(store, eventsSpy().events, () => NOW);
    expect(await reasonOf(uc.create(ctx, {}))).toBe('validation_error');
    expect(await reasonOf(uc.create(ctx, { name: '   ' }))).toBe('validation_error');
    expect(await reasonOf(uc.update(ctx, 'x', { name: '  ' }))).toBe('validation_error');
    expect(calls).toHaveLength(0);
  });

  it('refuses calls without a tenant or without a key mode before touching the store', async () => {
    const { store, calls } = storeSpy();
    const uc = new CompanyUseCases(store, eventsSpy().events);
    expect(await reasonOf(uc.list({}, 1, 25))).toBe('unauthorized');
    expect(await reasonOf(uc.get({ tenantId: 't1' }, 'x'))).toBe('unauthorized');
    expect(calls).toHaveLength(0);
  });

  it('clamps paging defensively and says which page it answered', async () => {
    const { store, calls } = storeSpy();
    const res = await new CompanyUseCases(store, eventsSpy().events).list(ctx, 0, 1_000);
    expect(calls[0]!.args.slice(1)).toEqual([1, 100]);
    expect(res).toMatchObject({ page: 1, limit: 100 });
  });

  it('reports absent companies as not_found, and announces no change that did not happen', async () => {
    const { store } = storeSpy();
    const { events, log } = eventsSpy();
    const uc = new CompanyUseCases(store, events);
    expect(await reasonOf(uc.get(ctx, 'x'))).toBe('not_found');
    expect(await reasonOf(uc.update(ctx, 'x', { industry: 'a' }))).toBe('not_found');
    expect(await reasonOf(uc.delete(ctx, 'x'))).toBe('not_found');
    expect(log).toEqual(['held x industry', 'discarded e-x', 'held x deleted', 'discarded e-x']);
  });
});
