import { Lifecycle } from './lifecycle';
import { createLogger } from './logger';

const log = createLogger('test', 'silent');
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

describe('Lifecycle', () => {
  it('runs its steps last-registered first, all within the one grace period, the last ones still getting a second', async () => {
    const seen: { name: string; budgetMs: number }[] = [];
    const lifecycle = new Lifecycle(log, 3_000);
    lifecycle.onStop('store', (budgetMs) => void seen.push({ name: 'store', budgetMs }));
    lifecycle.onStop('workers', async (budgetMs) => {
      seen.push({ name: 'workers', budgetMs });
      await new Promise(() => {}); // never ends by itself: cut short when the grace period is spent
    });
    lifecycle.onStop('server', async (budgetMs) => {
      seen.push({ name: 'server', budgetMs });
      await sleep(1_000);
    });
    const started = Date.now();
    await lifecycle.stop();
    const took = Date.now() - started;

    expect(seen.map((s) => s.name)).toEqual(['server', 'workers', 'store']);
    expect(seen[0]!.budgetMs).toBe(3_000);
    // The hung step had what the first left, not a grace period of its own.
    expect(seen[1]!.budgetMs).toBeGreaterThan(1_500);
    expect(seen[1]!.budgetMs).toBeLessThanOrEqual(2_000);
    expect(seen[2]!.budgetMs).toBe(1_000);
    expect(took).toBeGreaterThanOrEqual(2_990);
    expect(took).toBeLessThan(4_000);
  });
});
