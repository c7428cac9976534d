import { Coalescer } from './coalesce';
import { duplicatePositions } from './mongo/connect';

describe('Coalescer', () => {
  it('writes what arrives during a write together next, answering each caller its own result', async () => {
    const rounds: number[][] = [];
    const c = new Coalescer<number, number>(async (items) => {
      rounds.push(items);
      await new Promise((r) => setTimeout(r, 10));
      return items.map((i) => i * 10);
    });
    // Asked in one turn of the event loop: one round.
    expect(await Promise.all([1, 2, 3, 4].map((i) => c.run(i)))).toEqual([10, 20, 30, 40]);
    // Asked while a round is under way: the next round.
    const first = c.run(5);
    await new Promise((r) => setTimeout(r, 2));
    const later = [6, 7, 8].map((i) => c.run(i));
    expect(await Promise.all([first, ...later])).toEqual([50, 60, 70, 80]);
    expect(rounds).toEqual([[1, 2, 3, 4], [5], [6, 7, 8]]);
  });

  it('gives every caller of a failed round the error, and goes on with the next', async () => {
    let fail = true;
    const c = new Coalescer<number, number>(async (items) => {
      if (fail) throw new Error('down');
      return items;
    });
    await expect(c.run(1)).rejects.toThrow('down');
    fail = false;
    await expect(c.run(2)).resolves.toBe(2);
  });
});

describe('duplicatePositions', () => {
  it('names the duplicates of an unordered insert, from the driver or as mongoose wraps them', () => {
    expect(
      duplicatePositions({
        code: 11000,
        writeErrors: [
          { index: 1, code: 11000 },
          { index: 3, code: 11000 },
        ],
      }),
    ).toEqual([1, 3]);
    expect(duplicatePositions({ writeErrors: [{ err: { index: 2, code: 11000 } }] })).toEqual([2]);
    expect(duplicatePositions({ writeErrors: { index: 0, code: 11000 } })).toEqual([0]);
  });

  it('is undefined when anything but duplicates went wrong', () => {
    expect(
      duplicatePositions({
        writeErrors: [
          { index: 0, code: 11000 },
          { index: 1, code: 121 },
        ],
      }),
    ).toBeUndefined();
    expect(duplicatePositions(new Error('timeout'))).toBeUndefined();
  });
});
