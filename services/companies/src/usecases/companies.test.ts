import { DomainError, requireTenant } from '@voiceapi/kit';
import type { CompanyStore } from '../store/company-store';
import { Companies } from './companies';
import type { CompanyEvents } from './ports';

const NOW = new Date('2026-01-02T03:04:05Z');

// The use cases' own rules: what they refuse before the store is touched, and what they pass on.
// The store itself runs against a real server in test/companies.int.test.ts.
function storeSpy() {
  const calls: { method: string; args: unknown[] }[] = [];
  const store = new Proxy({} as CompanyStore, {
    get:
      (_t, method: string) =>
      async (...args: unknown[]) => {
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

const scope = requireTenant({ tenantId: 't1', keyMode: 'live' });
const reasonOf = async (p: Promise<unknown>) =>
  (
    (await p.then(
      () => undefined,
      (e: unknown) => e,
    )) as DomainError
  ).reasonCode;

describe('Companies', () => {
  it('passes on only the fields that were sent, with the time of the change', async () => {
    const { store, calls } = storeSpy();
    await new Companies(store, eventsSpy().events, () => NOW).update(scope, 'id', { industry: 'health' }).catch(() => undefined); // the spy store answers nothing useful: only the call's arguments are checked
    expect(calls[0]!.args.slice(2)).toEqual([{ industry: 'health' }, NOW, []]);
  });

  it('refuses to set and remove the same field in one update', async () => {
    const { store, calls } = storeSpy();
    expect(await reasonOf(new Companies(store, eventsSpy().events).update(scope, 'id', { mobile: '+1 555 0100' }, ['mobile']))).toBe('validation_error');
    expect(calls).toHaveLength(0);
  });

  it('requires a non-empty name on create and refuses to blank it on update, before the store is touched', async () => {
    const { store, calls } = storeSpy();
    const uc = new Companies(store, eventsSpy().events, () => NOW);
    expect(await reasonOf(uc.create(scope, {}))).toBe('validation_error');
    expect(await reasonOf(uc.create(scope, { name: '   ' }))).toBe('validation_error');
    expect(await reasonOf(uc.update(scope, 'x', { name: '  ' }))).toBe('validation_error');
    expect(calls).toHaveLength(0);
  });

  it('clamps paging defensively and says which page it answered', async () => {
    const { store, calls } = storeSpy();
    const res = await new Companies(store, eventsSpy().events).list(scope, 0, 1_000);
    expect(calls[0]!.args.slice(1)).toEqual([1, 100]);
    expect(res).toMatchObject({ page: 1, limit: 100 });
  });

  it('reports absent companies as not_found, and announces no change that did not happen', async () => {
    const { store } = storeSpy();
    const { events, log } = eventsSpy();
    const uc = new Companies(store, events);
    expect(await reasonOf(uc.get(scope, 'x'))).toBe('not_found');
    expect(await reasonOf(uc.update(scope, 'x', { industry: 'a' }))).toBe('not_found');
    expect(await reasonOf(uc.delete(scope, 'x'))).toBe('not_found');
    expect(log).toEqual(['held x industry', 'discarded e-x', 'held x deleted', 'discarded e-x']);
  });
});
