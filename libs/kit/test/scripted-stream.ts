import type { WakeSource } from '../src/mongo/change-feed';

/**
 * For unit tests of what a change feed drives: a collection (in a database of its own) whose change
 * streams the test moves by hand. `changed()` hands each open stream one change of the collection
 * (once one is open); `fail()` makes each fail as a store going away does. Both let the feed's reads
 * run before they resolve.
 */
export function scriptedCollection(operations: WakeSource['operations'] = ['insert', 'update']) {
  const streams: { change: () => void; fail: (err: Error) => void }[] = [];
  const change = { operationType: operations[0], ns: { db: 'scripted', coll: 'scripted' } };
  const db = {
    databaseName: 'scripted',
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
          if (w) w.resolve(change);
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
              resolve(change);
            } else waiting = { resolve, reject };
          }),
        close: () => Promise.resolve(take()?.reject(new Error('ChangeStream is closed'))),
      } as never;
    },
  };
  const settle = () => new Promise((r) => setImmediate(r));
  return {
    source: {
      model: { collection: { collectionName: 'scripted' }, db: { db: db as never } },
      operations,
    } satisfies WakeSource,
    /** How many streams were opened (a failed one is opened again). */
    opened: () => streams.length,
    changed: async () => {
      // The feeds of a database open their stream together, shortly after they start.
      while (streams.length === 0) await new Promise((r) => setTimeout(r, 5));
      for (const s of streams) s.change();
      await settle();
    },
    fail: async (err = new Error('store away')) => {
      for (const s of streams) s.fail(err);
      await settle();
    },
  };
}
