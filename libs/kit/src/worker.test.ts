import { scriptedCollection } from '../test/scripted-stream';
import type { Logger } from './logger';
import { Worker, type PassResult } from './worker';

const flush = () => new Promise((r) => setImmediate(r));
const log = () =>
  ({ warn: jest.fn(), info: jest.fn(), error: jest.fn(), debug: jest.fn() }) as unknown as Logger & { warn: jest.Mock };

/** A lease the test holds or not, counting who holds it. */
function fakeLease(held: boolean) {
  const taken: (() => void)[] = [];
  return {
    held,
    /** Whether another replica contends for it. */
    shared: false,
    holders: 0,
    async hold() {
      this.holders++;
    },
    async letGo() {
      this.holders--;
    },
    onTaken(l: () => void) {
      taken.push(l);
    },
    /** This replica takes the lease over. */
    take() {
      this.held = true;
      for (const l of taken) l();
    },
  };
}

describe('Worker', () => {
  it('runs a pass at start, on wake-ups, and once more for wake-ups during a pass', async () => {
    let passes = 0;
    let release!: () => void;
    const w = new Worker({
      service: 'test',
      job: 'j',
      everyMs: 60_000,
      log: log(),
      pass: async () => {
        passes++;
        if (passes === 2) await new Promise<void>((r) => (release = r));
      },
    });
    w.start();
    await w.idle();
    expect(passes).toBe(1);
    w.wake(); // pass 2 starts and waits
    await flush();
    w.wake();
    w.wake(); // both served by one pass after it
    release();
    await w.idle();
    expect(passes).toBe(3);
    await w.stop();
  });

  it('passes again at once while a pass says there is more', async () => {
    const left = [5, 3, 0];
    const results: PassResult[] = [];
    const w = new Worker({
      service: 'test',
      job: 'j',
      everyMs: 60_000,
      log: log(),
      pass: async () => {
        const r: PassResult = (left.shift() ?? 0) > 0 ? 'more' : 'done';
        results.push(r);
        return r;
      },
    });
    w.start();
    await w.idle();
    expect(results).toEqual(['more', 'more', 'done']);
    await w.stop();
  });

  it('runs passes only on the replica holding its lease, holds it while started and lets it go at stop', async () => {
    const lease = fakeLease(false);
    let passes = 0;
    const w = new Worker({
      service: 'test',
      job: 'j',
      everyMs: 60_000,
      lease,
      log: log(),
      pass: async () => void passes++,
    });
    w.start();
    await w.idle();
    expect(lease.holders).toBe(1);
    expect(passes).toBe(0);
    lease.held = true;
    w.wake();
    await w.idle();
    expect(passes).toBe(1);
    await w.stop();
    expect(lease.holders).toBe(0);
  });

  it('lets a lease it shares go once, however often it is stopped', async () => {
    const lease = fakeLease(true);
    const [a, b] = [0, 1].map(
      () => new Worker({ service: 'test', job: 'j', everyMs: 60_000, lease, log: log(), pass: async () => undefined }),
    );
    a!.start();
    b!.start();
    await Promise.all([a!.idle(), b!.idle()]);
    expect(lease.holders).toBe(2);
    await Promise.all([a!.stop(), a!.stop()]);
    await a!.stop();
    expect(lease.holders).toBe(1);
    await b!.stop();
    expect(lease.holders).toBe(0);
  });

  it('logs a failed pass and passes again on the next wake-up', async () => {
    const l = log();
    let passes = 0;
    const w = new Worker({
      service: 'test',
      job: 'j',
      everyMs: 60_000,
      log: l,
      pass: async () => {
        if (++passes === 1) throw new Error('store away');
      },
    });
    w.start();
    await w.idle();
    expect(l.warn).toHaveBeenCalledTimes(1);
    w.wake();
    await w.idle();
    expect(passes).toBe(2);
    await w.stop();
  });

  it('wakes on its timer, and not after stop, which waits for the pass under way', async () => {
    let passes = 0;
    let finished = false;
    const w = new Worker({
      service: 'test',
      job: 'j',
      everyMs: 20,
      log: log(),
      pass: async () => {
        passes++;
        await new Promise((r) => setTimeout(r, 30));
        finished = true;
      },
    });
    w.start();
    await new Promise((r) => setTimeout(r, 150));
    expect(passes).toBeGreaterThanOrEqual(2);
    finished = false;
    w.wake();
    await w.stop();
    const after = passes;
    expect(finished).toBe(true);
    await new Promise((r) => setTimeout(r, 80));
    expect(passes).toBe(after);
  });

  it('runs a pass at the time asked for, keeping the earliest of several', async () => {
    jest.useFakeTimers();
    try {
      let passes = 0;
      const w = new Worker({ service: 'test', job: 'j', everyMs: 60_000, log: log(), pass: async () => void passes++ });
      w.start();
      await jest.advanceTimersByTimeAsync(0);
      expect(passes).toBe(1);
      w.wakeIn(5_000);
      w.wakeIn(2_000);
      w.wakeIn(9_000);
      await jest.advanceTimersByTimeAsync(1_999);
      expect(passes).toBe(1);
      await jest.advanceTimersByTimeAsync(1);
      expect(passes).toBe(2);
      // The later times were superseded: nothing more until the safety timer.
      await jest.advanceTimersByTimeAsync(10_000);
      expect(passes).toBe(2);
      await w.stop();
    } finally {
      jest.useRealTimers();
    }
  });

  it('sets no alarm for a time its timer comes sooner than, however far away (a follow-up months ahead)', async () => {
    jest.useFakeTimers();
    try {
      let passes = 0;
      const w = new Worker({ service: 'test', job: 'j', everyMs: 1_000, log: log(), pass: async () => void passes++ });
      w.start();
      await jest.advanceTimersByTimeAsync(0);
      expect(passes).toBe(1);
      // Past setTimeout's range (2^31 - 1 ms), which Node would cut to 1 ms: a pass at once, over and over.
      w.wakeIn(90 * 24 * 3600_000);
      await jest.advanceTimersByTimeAsync(999);
      expect(passes).toBe(1);
      await jest.advanceTimersByTimeAsync(1);
      expect(passes).toBe(2); // the timer's
      await w.stop();
    } finally {
      jest.useRealTimers();
    }
  });

  it('with a look pace: looks at it while another replica contends for the lease, at the safety net alone (decision 0141)', async () => {
    jest.useFakeTimers();
    try {
      let passes = 0;
      const lease = fakeLease(true);
      const spec = { service: 'test', job: 'j', everyMs: 30_000, lookMs: 250, lease, log: log() };
      const w = new Worker({ ...spec, pass: async () => void passes++ });
      w.start();
      await jest.advanceTimersByTimeAsync(0);
      expect(passes).toBe(1);
      // Alone: no look for 30 s, only what wakes it.
      await jest.advanceTimersByTimeAsync(10_000);
      expect(passes).toBe(1);
      w.wake();
      await jest.advanceTimersByTimeAsync(0);
      expect(passes).toBe(2);
      // Another replica contends: a look every 250 ms.
      lease.shared = true;
      await jest.advanceTimersByTimeAsync(1_000);
      expect(passes).toBe(6);
      // Alone again: the safety net, 30 s after the last pass.
      lease.shared = false;
      await jest.advanceTimersByTimeAsync(29_000);
      expect(passes).toBe(6);
      await jest.advanceTimersByTimeAsync(1_250);
      expect(passes).toBe(7);
      await w.stop();
    } finally {
      jest.useRealTimers();
    }
  });

  it('looks for work at once when its replica takes the lease over', async () => {
    let passes = 0;
    const lease = fakeLease(false);
    const w = new Worker({
      service: 'test',
      job: 'j',
      everyMs: 60_000,
      lease,
      log: log(),
      pass: async () => void passes++,
    });
    w.start();
    await w.idle();
    expect(passes).toBe(0);
    lease.take();
    await w.idle();
    expect(passes).toBe(1);
    await w.stop();
  });

  it('is woken by changes to the collections it watches, a burst of them served by one pass', async () => {
    jest.useFakeTimers();
    try {
      const work = scriptedCollection(['insert']);
      let passes = 0;
      const w = new Worker({
        service: 'test',
        job: 'j',
        everyMs: 60_000,
        wakeOn: [work.source],
        gatherMs: 50,
        log: log(),
        pass: async () => void passes++,
      });
      w.start();
      // The feeds of a database open their one stream together, 20 ms after the first starts.
      await jest.advanceTimersByTimeAsync(20);
      expect({ passes, streams: work.opened() }).toEqual({ passes: 1, streams: 1 });
      for (let i = 0; i < 5; i++) void work.changed();
      await jest.advanceTimersByTimeAsync(49);
      expect(passes).toBe(1);
      await jest.advanceTimersByTimeAsync(1);
      expect(passes).toBe(2);
      // A stream that fails is opened again, and the worker looks once in case it missed a change.
      void work.fail();
      await jest.advanceTimersByTimeAsync(1_000);
      expect(work.opened()).toBe(2);
      await jest.advanceTimersByTimeAsync(50);
      expect(passes).toBe(3);
      await w.stop();
    } finally {
      jest.useRealTimers();
    }
  });
});
