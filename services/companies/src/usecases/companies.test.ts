import { announcerInMemory } from '../../../../libs/kit/test/announcer-in-memory';
import { DomainError } from '@voiceapi/kit/errors';
import { type ReadBack } from '@voiceapi/kit/events';
import { requireTenant } from '@voiceapi/kit/grpc';
import { companyEvents } from '../events/publish';
import type { CompanyStore } from '../store/company-store';
import { Companies } from './companies';

const NOW = new Date('2026-01-02T03:04:05Z');

// The use cases' own rules: what they refuse before the store is touched, and what they pass on.
// The store itself runs against a real server in test/companies.int.test.ts.
function storeSpy(fails?: Error) {
  const calls: { method: string; args: unknown[] }[] = [];
  const readBacks: Record<string, (...args: unknown[]) => ReadBack> = {
    updatedAt: (_scope, id) => ({ collection: 'companies', filter: { _id: id }, applied: 'present' }),
    deleted: (_scope, id) => ({ collection: 'companies', filter: { _id: id }, applied: 'absent' }),
  };
  const store = new Proxy({} as CompanyStore, {
    get: (_t, method: string) =>
      readBacks[method] ??
      (async (...args: unknown[]) => {
        calls.push({ method, args });
        if (fails && (method === 'update' || method === 'delete')) throw fails;
        return method === 'list' ? { items: [], total: 0, hasMore: false } : method === 'delete' ? false : null;
      }),
  });
  return { store, calls };
}

/** The outbox in memory; `there` plays the store's answer when a write is read back. */
function eventsSpy(there = false) {
  const outbox = announcerInMemory(() => there);
  return { events: companyEvents(outbox), outbox };
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
    await new Companies(store, eventsSpy().events, () => NOW)
      .update(scope, 'id', { industry: 'health' })
      .catch(() => undefined); // only what reached the store matters here
    expect(calls[0]!.args.slice(2)).toEqual([{ industry: 'health' }, NOW, []]);
  });

  it('refuses to set and remove the same field in one update', async () => {
    const { store, calls } = storeSpy();
    expect(
      await reasonOf(
        new Companies(store, eventsSpy().events).update(scope, 'id', { mobile: '+1 555 0100' }, ['mobile']),
      ),
    ).toBe('validation_error');
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

  it('lists the page it was asked for (checked by the adapter, kit pageAsked) and says which page it answered', async () => {
    const { store, calls } = storeSpy();
    const res = await new Companies(store, eventsSpy().events).list(scope, { page: 3, limit: 100 });
    expect(calls[0]!.args.slice(1)).toEqual([3, 100]);
    expect(res).toMatchObject({ page: 3, limit: 100 });
  });

  it('reports absent companies as not_found, and announces no change that did not happen', async () => {
    const { store } = storeSpy();
    const { events, outbox } = eventsSpy();
    const uc = new Companies(store, events);
    expect(await reasonOf(uc.get(scope, 'x'))).toBe('not_found');
    expect(await reasonOf(uc.update(scope, 'x', { industry: 'a' }))).toBe('not_found');
    expect(await reasonOf(uc.delete(scope, 'x'))).toBe('not_found');
    expect({ held: [...outbox.held], published: outbox.published }).toEqual({ held: [], published: [] });
  });

  // Issue: a write that threw left its event held, and the relay published it some 30 s later
  // whether or not the change happened. Now the store is read back at once.
  describe.each(['update', 'delete'] as const)('when the store fails part-way through %s', (op) => {
    const run = (uc: Companies) => (op === 'update' ? uc.update(scope, 'x', { industry: 'a' }) : uc.delete(scope, 'x'));

    it('announces nothing if the change is not there', async () => {
      const { store } = storeSpy(new Error('connection reset'));
      const { events, outbox } = eventsSpy(false);
      await expect(run(new Companies(store, events))).rejects.toThrow('connection reset');
      expect({ held: [...outbox.held], published: outbox.published }).toEqual({ held: [], published: [] });
    });

    it('announces the change if it is there', async () => {
      const { store } = storeSpy(new Error('connection reset'));
      const { events, outbox } = eventsSpy(true);
      await expect(run(new Companies(store, events))).rejects.toThrow('connection reset');
      expect({ held: [...outbox.held], published: outbox.published.length }).toEqual({ held: [], published: 1 });
    });
  });
});
