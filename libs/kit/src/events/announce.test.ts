import { notFound } from '../errors';
import { announceWith, type HeldEvents, type ReadBack } from './announce';
import type { EventRecord } from './kafka';

const event = (id: string, key = 'k'): EventRecord => ({
  eventId: id,
  topic: 't',
  key,
  type: 'T',
  payload: new Uint8Array([1]),
});
const there = (id: string): ReadBack => ({ collection: 'things', filter: { _id: id }, applied: 'present' });

/** Held events in memory: what is held, what went out, what was dropped; the store's contents decide read-backs. */
function heldSpy(opts: { stored?: Set<string>; readFails?: boolean } = {}) {
  const held = new Set<string>();
  const log: string[] = [];
  const store: HeldEvents = {
    hold: async (events) => {
      const before = new Set(events.filter((e) => held.has(e.eventId)).map((e) => e.eventId));
      events.forEach((e) => (held.add(e.eventId), log.push(`held ${e.eventId}`)));
      return before;
    },
    release: async (ids) => void ids.forEach((id) => (held.delete(id), log.push(`released ${id}`))),
    discard: async (ids) => void ids.forEach((id) => (held.delete(id), log.push(`discarded ${id}`))),
    happened: async (rb) => {
      log.push('read back');
      if (opts.readFails) throw new Error('store away');
      if (rb.applied === 'always') return true;
      const found = opts.stored?.has(rb.filter._id as string) ?? false;
      return rb.applied === 'present' ? found : !found;
    },
    warn: (_fields, message) => void log.push(`warn: ${message}`),
  };
  return { store, held, log };
}

const storeAway = () => Object.assign(new Error('connection reset'), { name: 'MongoNetworkError' });

describe('announceWith: a write and the events it announces', () => {
  it('releases the events when the write applied, and answers its result', async () => {
    const { store, held, log } = heldSpy();
    const result = await announceWith(store, [event('e1')], async () => 'done', { readBack: there('x') });
    expect(result).toBe('done');
    expect(log).toEqual(['held e1', 'released e1']);
    expect(held.size).toBe(0);
  });

  it('holds the events before the write runs', async () => {
    const { store, held } = heldSpy();
    let heldDuringWrite = false;
    await announceWith(store, [event('e1')], async () => void (heldDuringWrite = held.has('e1')), {
      readBack: there('x'),
    });
    expect(heldDuringWrite).toBe(true);
  });

  it('discards the events when the write did not apply (it matched nothing)', async () => {
    const { store, log } = heldSpy();
    expect(
      await announceWith(store, [event('e1')], async () => null, { applied: (r) => r !== null, readBack: there('x') }),
    ).toBeNull();
    expect(log).toEqual(['held e1', 'discarded e1']);
  });

  it("never discards an event an earlier try stored: that try's write decides it (its writer, or the relay's read-back)", async () => {
    const { store, held, log } = heldSpy();
    held.add('e1'); // an earlier try of the same write, its write done or under way
    await announceWith(store, [event('e1'), event('e2')], async () => null, {
      applied: (r) => r !== null,
      readBack: there('x'),
    });
    expect(log).toEqual(['held e1', 'held e2', 'discarded e2']);
    expect(held.has('e1')).toBe(true);
    await expect(
      announceWith(store, [event('e1')], async () => Promise.reject(notFound('thing')), { readBack: there('x') }),
    ).rejects.toMatchObject({ reasonCode: 'not_found' });
    expect(held.has('e1')).toBe(true);
  });

  it('discards the events without reading back when the write refused (a DomainError)', async () => {
    const { store, log } = heldSpy();
    await expect(
      announceWith(store, [event('e1')], async () => Promise.reject(notFound('thing')), { readBack: there('x') }),
    ).rejects.toMatchObject({ reasonCode: 'not_found' });
    expect(log).toEqual(['held e1', 'discarded e1']);
  });

  it('when the write failed part-way and its change is there, releases the events and rethrows', async () => {
    const { store, log } = heldSpy({ stored: new Set(['x']) });
    const failed = storeAway();
    await expect(
      announceWith(store, [event('e1')], () => Promise.reject(failed), { readBack: there('x') }),
    ).rejects.toBe(failed);
    expect(log).toEqual(['held e1', 'read back', 'released e1']);
  });

  it('when the write failed part-way and its change is not there, discards the events and rethrows', async () => {
    const { store, log } = heldSpy({ stored: new Set() });
    await expect(
      announceWith(store, [event('e1')], () => Promise.reject(storeAway()), { readBack: there('x') }),
    ).rejects.toThrow('connection reset');
    expect(log).toEqual(['held e1', 'read back', 'discarded e1']);
  });

  it("when reading back fails too, leaves the events held (the relay settles them) and rethrows the write's error", async () => {
    const { store, held, log } = heldSpy({ readFails: true });
    await expect(
      announceWith(store, [event('e1')], () => Promise.reject(storeAway()), { readBack: there('x') }),
    ).rejects.toThrow('connection reset');
    expect([...held]).toEqual(['e1']);
    expect(log.filter((l) => /released|discarded/.test(l))).toEqual([]);
    expect(log.at(-1)).toMatch(/left held/);
  });

  it('settles each event by its own read-back (a batch written part-way), reading each distinct one once', async () => {
    const { store, log } = heldSpy({ stored: new Set(['a']) });
    const events = [event('a1', 'a'), event('a2', 'a'), event('b1', 'b')];
    await expect(
      announceWith(store, events, () => Promise.reject(storeAway()), { readBack: (e) => there(e.key) }),
    ).rejects.toThrow();
    expect(log.filter((l) => l === 'read back')).toHaveLength(2);
    expect(log.filter((l) => /released|discarded/.test(l))).toEqual(['released a1', 'released a2', 'discarded b1']);
  });

  it('a failure to release after the write does not fail the caller: the write is done, the events stay held', async () => {
    const { store, held } = heldSpy();
    store.release = () => Promise.reject(storeAway());
    await expect(announceWith(store, [event('e1')], async () => 'done', { readBack: there('x') })).resolves.toBe(
      'done',
    );
    expect([...held]).toEqual(['e1']);
  });

  it('runs no write when the events cannot be stored', async () => {
    const { store } = heldSpy();
    store.hold = () => Promise.reject(storeAway());
    let wrote = false;
    await expect(
      announceWith(store, [event('e1')], async () => void (wrote = true), { readBack: there('x') }),
    ).rejects.toThrow('connection reset');
    expect(wrote).toBe(false);
  });
});
