import type { WakeSource } from './change-feed';

/**
 * For unit tests of what a change feed drives: a collection whose change streams the test moves
 * by hand. `changed()` hands each open stream one change; `fail()` makes each fail as a store
 * going away does. Both let the feed's reads run before they resolve.
 */
export function scriptedCollection(operations: WakeSource['operations'] = ['insert', 'update']) {
  const streams: { change: () => void; fail: (err: Error) => void }[] = [];
  const collection = {
    collectionName: 'scripted',
    watch: () => {
      let pending = 0;
      let waiting: { resolve: (v: unknown) => void; reject: (e: Error) => void } | undefined;
      let failure: Error | undefined;
      const take = () => {
        const w = waiting;
        waiting = undefined;
        return w;
      };
      streams.push({
        change: () => {
          const w = take();
          if (w) w.resolve({ operationType: operations[0] });
          else pending++;
        },
        fail: (err) => {
          failure = err;
          take()?.reject(err);
        },
      });
      return {
        next: () =>
          new Promise((resolve, reject) => {
            if (failure) reject(failure);
            else if (pending > 0) {
              pending--;
              resolve({ operationType: operations[0] });
            } else waiting = { resolve, reject };
          }),
        close: () => Promise.resolve(take()?.reject(new Error('ChangeStream is closed'))),
      } as never;
    },
  };
  const settle = () => new Promise((r) => setImmediate(r));
  return {
    source: { model: { collection }, operations } satisfies WakeSource,
    /** How many streams were opened (a failed one is opened again). */
    opened: () => streams.length,
    changed: async () => {
      for (const s of streams) s.change();
      await settle();
    },
    fail: async (err = new Error('store away')) => {
      for (const s of streams) s.fail(err);
      await settle();
    },
  };
}
