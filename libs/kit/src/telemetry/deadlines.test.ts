import { DeadlineCounter, type LateAttributes } from './deadlines';
import type { TypedCounter } from './metrics';

describe('DeadlineCounter', () => {
  let nowMs = 0;
  let counts: Map<string, number>;
  const counter: TypedCounter<LateAttributes<{ kind: string }>> = {
    add: (n, a) => void counts.set(`${a.kind}/${a.late}`, (counts.get(`${a.kind}/${a.late}`) ?? 0) + n),
  };
  const at = (ms: number) => new Date(ms);
  let excused = new Set<string>();
  let letGo = new Set<string>();
  let deadlines: DeadlineCounter<{ kind: string }>;

  beforeEach(() => {
    nowMs = 0;
    counts = new Map();
    excused = new Set();
    letGo = new Set();
    deadlines = new DeadlineCounter(counter, 60_000, {
      initial: [{ kind: 'a' }],
      excused: (key) => excused.has(key),
      held: (key) => !letGo.has(key),
      now: () => nowMs,
    });
  });
  afterEach(() => ['x', 'y', 'z', 'w'].forEach((k) => deadlines.drop(k)));

  it('creates both series at 0, so the SLI exists before anything is counted', () => {
    expect(Object.fromEntries(counts)).toEqual({ 'a/false': 0, 'a/true': 0 });
  });

  it('counts an item done within its deadline in time, and one done after it late, once', () => {
    deadlines.wait('x', at(0), { kind: 'a' });
    deadlines.done('x', at(0), at(59_000), { kind: 'a' });
    deadlines.done('y', at(0), at(61_000), { kind: 'a' }); // never waited here: from its own start
    expect(Object.fromEntries(counts)).toEqual({ 'a/false': 1, 'a/true': 1 });
  });

  it('counts a waiting item late the moment its deadline passes, and not again when it is done', () => {
    deadlines.wait('x', at(0), { kind: 'a' });
    nowMs = 60_000;
    deadlines.sweep();
    expect(counts.get('a/true')).toBe(0); // at the deadline: not yet
    nowMs = 60_001;
    deadlines.sweep();
    expect(counts.get('a/true')).toBe(1);
    expect(deadlines.size).toBe(0);
    // Taken up again (another pass, the same process): still counted once.
    deadlines.wait('x', at(0), { kind: 'a' });
    deadlines.done('x', at(0), at(300_000), { kind: 'a' });
    expect(Object.fromEntries(counts)).toEqual({ 'a/false': 0, 'a/true': 1 });
  });

  it('leaves an excused item waiting, uncounted and in time when done; counts a dropped or let-go one nowhere', () => {
    deadlines.wait('x', at(0), { kind: 'a' });
    deadlines.wait('y', at(0), { kind: 'a' });
    deadlines.wait('z', at(0), { kind: 'a' });
    excused.add('x');
    letGo.add('z'); // handed to another replica
    nowMs = 120_000;
    deadlines.sweep();
    expect(counts.get('a/true')).toBe(1); // y
    expect(deadlines.size).toBe(1); // x waits on
    deadlines.done('x', at(0), at(130_000), { kind: 'a' });
    expect(Object.fromEntries(counts)).toEqual({ 'a/false': 1, 'a/true': 1 });
    deadlines.wait('w', at(0), { kind: 'a' });
    deadlines.drop('w');
    nowMs = 500_000;
    deadlines.sweep();
    expect(Object.fromEntries(counts)).toEqual({ 'a/false': 1, 'a/true': 1 });
  });

  it('keeps the first start of an item waited twice', () => {
    deadlines.wait('x', at(0), { kind: 'a' });
    deadlines.wait('x', at(50_000), { kind: 'a' });
    nowMs = 61_000;
    deadlines.sweep();
    expect(counts.get('a/true')).toBe(1);
  });

  it('sweeps on its own every second while anything waits', async () => {
    nowMs = Date.now();
    const live = new DeadlineCounter(counter, 50, { initial: [] });
    live.wait('z', new Date(), { kind: 'b' });
    await new Promise((r) => setTimeout(r, 1_300));
    expect(counts.get('b/true')).toBe(1);
    expect(live.size).toBe(0);
  });
});
