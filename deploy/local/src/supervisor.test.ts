import { supervise, type Running } from './supervisor';

/** A fake process whose exit the test decides. */
function fakeProcess(pid: number): Running & { exit(how: string): void; stopped: boolean } {
  let exit!: (how: string) => void;
  const exited = new Promise<string>((r) => (exit = r));
  const proc = {
    pid,
    exited,
    stopped: false,
    exit,
    stop: async () => {
      proc.stopped = true;
      exit('signal SIGTERM');
    },
  };
  return proc;
}

const flush = async () => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe('supervise', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it('restarts an exited process with a doubling delay, capped, and says so', async () => {
    const lines: string[] = [];
    const procs: ReturnType<typeof fakeProcess>[] = [];
    const sup = supervise({
      name: 'companies',
      say: (l) => lines.push(l),
      backoff: { initialMs: 500, maxMs: 2000, resetAfterMs: 60_000 },
      start: async () => {
        const p = fakeProcess(procs.length + 1);
        procs.push(p);
        return p;
      },
    });
    await sup.started;
    for (const delay of [0.5, 1, 2, 2]) {
      procs.at(-1)!.exit('signal SIGKILL');
      await flush();
      expect(lines.at(-1)).toBe(`companies exited (signal SIGKILL); restarting in ${delay} s`);
      expect(sup.current()).toBeUndefined();
      jest.advanceTimersByTime(delay * 1000 - 1);
      await flush();
      const before = procs.length;
      jest.advanceTimersByTime(1);
      await flush();
      expect(procs.length).toBe(before + 1);
      expect(sup.current()?.pid).toBe(procs.length);
    }
    expect(sup.restarts()).toBe(4);
    await sup.stop();
    expect(procs.at(-1)!.stopped).toBe(true);
  });

  it('goes back to the first delay once the process stayed up long enough', async () => {
    const lines: string[] = [];
    let last: ReturnType<typeof fakeProcess> | undefined;
    const sup = supervise({
      name: 'gateway',
      say: (l) => lines.push(l),
      backoff: { initialMs: 500, maxMs: 30_000, resetAfterMs: 10_000 },
      start: async () => (last = fakeProcess(1)),
    });
    await sup.started;
    last!.exit('code 1');
    await flush();
    jest.advanceTimersByTime(500);
    await flush();
    last!.exit('code 1');
    await flush();
    expect(lines.at(-1)).toMatch(/restarting in 1 s$/);
    jest.advanceTimersByTime(1000);
    await flush();
    jest.advanceTimersByTime(10_000); // stays up
    last!.exit('code 1');
    await flush();
    expect(lines.at(-1)).toMatch(/restarting in 0.5 s$/);
    await sup.stop();
  });

  it('retries a restart that fails, and a stop cancels a pending restart', async () => {
    const lines: string[] = [];
    let starts = 0;
    let first: ReturnType<typeof fakeProcess> | undefined;
    const sup = supervise({
      name: 'kafka',
      say: (l) => lines.push(l),
      start: async () => {
        starts++;
        if (starts === 1) return (first = fakeProcess(1));
        throw new Error('kafka exited (code 1) before broker was ready; last output:\n...');
      },
    });
    await sup.started;
    first!.exit('code 137');
    await flush();
    jest.advanceTimersByTime(500);
    await flush();
    expect(lines).toEqual([
      'kafka exited (code 137); restarting in 0.5 s',
      'kafka did not come back (kafka exited (code 1) before broker was ready; last output:); restarting in 1 s',
    ]);
    await sup.stop();
    jest.advanceTimersByTime(60_000);
    await flush();
    expect(starts).toBe(2);
  });

  it('rejects when the first start fails, and never retries it', async () => {
    let starts = 0;
    const sup = supervise({
      name: 'companies',
      say: () => undefined,
      start: async () => {
        starts++;
        throw new Error('invalid configuration');
      },
    });
    await expect(sup.started).rejects.toThrow('invalid configuration');
    jest.advanceTimersByTime(60_000);
    expect(starts).toBe(1);
  });

  it('after noMoreRestarts an exit is final, and stop still stops', async () => {
    const lines: string[] = [];
    let last: ReturnType<typeof fakeProcess> | undefined;
    const sup = supervise({ name: 'store', say: (l) => lines.push(l), start: async () => (last = fakeProcess(1)) });
    await sup.started;
    sup.noMoreRestarts();
    last!.exit('signal SIGINT');
    await flush();
    jest.advanceTimersByTime(60_000);
    await flush();
    expect(lines).toEqual([]);
    expect(sup.restarts()).toBe(0);
    await sup.stop();
  });

  it('does not restart a process stopped on purpose, and says it stopped', async () => {
    const lines: string[] = [];
    let starts = 0;
    const sup = supervise({
      name: 'companies',
      say: (l) => lines.push(l),
      start: async () => (starts++, fakeProcess(1)),
    });
    await sup.started;
    await sup.stop();
    jest.advanceTimersByTime(60_000);
    await flush();
    expect(starts).toBe(1);
    expect(lines).toEqual(['companies stopped']);
  });
});
