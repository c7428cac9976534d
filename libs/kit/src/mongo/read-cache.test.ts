import type { Logger } from '../logger';
import { ReadCache } from './read-cache';
import { scriptedCollection } from '../../test/scripted-stream';

const log = { warn: jest.fn(), info: jest.fn(), error: jest.fn(), debug: jest.fn() } as unknown as Logger;

describe('ReadCache', () => {
  it('answers repeated reads from memory, one load for concurrent misses, and nothing cached for null', async () => {
    const w = scriptedCollection(['update']);
    const cache = new ReadCache<string[]>({ source: w.source, ttlMs: 60_000, log });
    cache.start();
    const load = jest.fn(async () => ['a']);
    const [x, y] = await Promise.all([cache.get('k', load), cache.get('k', load)]);
    expect({ x, y, loads: load.mock.calls.length }).toEqual({ x: ['a'], y: ['a'], loads: 1 });
    expect(await cache.get('k', load)).toEqual(['a']);
    expect(load).toHaveBeenCalledTimes(1);
    const missing = jest.fn(async () => null);
    await cache.get('gone', missing);
    await cache.get('gone', missing);
    expect(missing).toHaveBeenCalledTimes(2);
    await cache.stop();
  });

  it('without a source: keeps a value until this process forgets it or its TTL passes (decision 0141)', async () => {
    const cache = new ReadCache<string[]>({ ttlMs: 200, log });
    cache.start();
    let value = 'v1';
    const load = jest.fn(async () => [value]);
    expect(await cache.get('k', load)).toEqual(['v1']);
    value = 'v2'; // another replica's change: not seen before the TTL
    expect(await cache.get('k', load)).toEqual(['v1']);
    await new Promise((r) => setTimeout(r, 250));
    expect(await cache.get('k', load)).toEqual(['v2']);
    value = 'v3'; // this process's change: forgotten at once
    cache.forget('k');
    expect(await cache.get('k', load)).toEqual(['v3']);
    expect(load).toHaveBeenCalledTimes(3);
    await cache.stop();
  });

  it('forgets everything when the collection changes, and a read begun before the change is not kept', async () => {
    const w = scriptedCollection(['update']);
    const cache = new ReadCache<string[]>({ source: w.source, ttlMs: 60_000, log });
    cache.start();
    let value = 'old';
    await cache.get('k', async () => [value]);
    value = 'new';
    await w.changed();
    expect(await cache.get('k', async () => [value])).toEqual(['new']);
    // A load that started before a change answers its caller but is not cached.
    let release!: () => void;
    const slow = cache.get('j', () => new Promise<string[]>((r) => (release = () => r(['stale']))));
    await w.changed();
    release();
    expect(await slow).toEqual(['stale']);
    expect(await cache.get('j', async () => ['fresh'])).toEqual(['fresh']);
    await cache.stop();
  });

  it('tells its listeners of a change only once it has forgotten what it held', async () => {
    const w = scriptedCollection(['update']);
    const cache = new ReadCache<string[]>({ source: w.source, ttlMs: 60_000, log });
    cache.start();
    let value = 'old';
    await cache.get('k', async () => [value]);
    const heard: string[][] = [];
    // What the listener reads is what a reader woken by it would get.
    cache.onChange(() => void cache.get('k', async () => [value]).then((v) => heard.push(v!)));
    value = 'new';
    await w.changed();
    await new Promise((r) => setImmediate(r));
    expect(heard).toEqual([['new']]);
    await cache.stop();
  });
});
