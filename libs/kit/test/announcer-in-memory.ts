import { announceWith, type Announcer, type HeldEvents, type ReadBack } from '../src/events/announce';

/**
 * An `Announcer` over events kept in memory, for use-case tests: `held` are stored and waiting,
 * `published` went out (released), and `happened` plays the store a read-back reads.
 */
export function announcerInMemory(
  happened: (readBack: ReadBack) => boolean = () => true,
): Announcer & { held: Set<string>; published: string[] } {
  const held = new Set<string>();
  const published: string[] = [];
  const store: HeldEvents = {
    hold: (events) => {
      const before = new Set(events.filter((e) => held.has(e.eventId)).map((e) => e.eventId));
      events.forEach((e) => held.add(e.eventId));
      return Promise.resolve(before);
    },
    release: (ids) => Promise.resolve(void ids.forEach((id) => held.delete(id) && published.push(id))),
    discard: (ids) => Promise.resolve(void ids.forEach((id) => held.delete(id))),
    happened: (rb) => Promise.resolve(rb.applied === 'always' || happened(rb)),
    warn: () => undefined,
  };
  return { held, published, announce: (events, write, opts) => announceWith(store, events, write, opts) };
}
