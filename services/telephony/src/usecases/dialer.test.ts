// Over 300 lines because the cases of one module share its fixtures.
import type { Logger } from '@voiceapi/kit';
import { outboundCallId } from '../domain/call';
import type { QueuedDial } from '../domain/dial';
import { Dialer, type DialerDeps } from './dialer';

const log = { warn: jest.fn(), info: jest.fn(), error: jest.fn(), debug: jest.fn() } as unknown as Logger;

/** A due dial of the tenant's i-th contact. */
const dial = (tenantId: string, dialId: string, i: number): QueuedDial => ({
  tenantId,
  dialId,
  contactId: `c${i}`,
  campaignId: 'k',
  phone: '+14155550100',
  maxCallSeconds: 60,
  queuedAt: new Date(0),
  notBefore: new Date(0),
});

/** A dispatcher over fakes: `lines` held per tenant, `due` dials per tenant; no dial is placed (no line is ever free with dials due). */
function dialerWith(
  state: { limit: number; held: Record<string, number>; due: Record<string, number> },
  gate: { wait?: Promise<void> } = {},
) {
  const reads = { tenantsWaiting: 0, due: 0 };
  const deps = {
    queue: {
      tenantsWaiting: async () => (reads.tenantsWaiting++, Object.keys(state.due)),
      due: async (scope: { tenantId: string }) => (
        reads.due++,
        Array.from({ length: state.due[scope.tenantId] ?? 0 }, (_, i) =>
          dial(scope.tenantId, `${scope.tenantId}-${i}`, i),
        )
      ),
    },
    lines: {
      held: async (scope: { tenantId: string }) => {
        await gate.wait;
        return Array.from({ length: state.held[scope.tenantId] ?? 0 }, (_, i) => ({ callId: `held-${i}` }));
      },
      takeMany: async () => new Set<string>(),
    },
    settings: { maxConcurrentCalls: async () => state.limit },
    log,
    now: () => new Date(1_000),
    wakeIn: () => undefined,
  } as unknown as DialerDeps;
  return { dialer: new Dialer(deps), reads };
}

describe('Dialer: which queued dials call for a pass', () => {
  it('a dial queued for a tenant whose lines are all taken, with dials waiting, calls for none (a freed line does)', async () => {
    const { dialer, reads } = dialerWith({ limit: 2, held: { busy: 2, idle: 0 }, due: { busy: 5 } });
    await dialer.dispatch();
    expect(dialer.waitingForLines).toBe(true);
    dialer.noteQueued('busy');
    expect(dialer.takeQueued()).toBe(false);
    // The tenants waiting are not read again for it either.
    const before = reads.tenantsWaiting;
    await dialer.dispatch();
    expect(reads.tenantsWaiting).toBe(before);
    // Another tenant's dial does call for a pass, and the next pass reads who waits.
    dialer.noteQueued('idle');
    expect(dialer.takeQueued()).toBe(true);
    expect(dialer.takeQueued()).toBe(false);
    await dialer.dispatch();
    expect(reads.tenantsWaiting).toBe(before + 1);
  });

  it('a tenant with a line free, or no dial waiting, is not saturated', async () => {
    const state = { limit: 2, held: { t: 2 }, due: { t: 3 } as Record<string, number> };
    const { dialer } = dialerWith(state);
    await dialer.dispatch();
    dialer.noteQueued('t');
    expect(dialer.takeQueued()).toBe(false);
    // Its lines freed and its queue served: the next dial of it calls for a pass.
    state.held.t = 0;
    state.due = {};
    await dialer.dispatch();
    dialer.noteQueued('t');
    expect(dialer.takeQueued()).toBe(true);
  });

  it('a dial queued while a pass is under way calls for another pass (the pass may leave lines free)', async () => {
    const gate: { wait?: Promise<void> } = {};
    const { dialer } = dialerWith({ limit: 1, held: { t: 1 }, due: { t: 2 } }, gate);
    await dialer.dispatch();
    dialer.noteQueued('t');
    expect(dialer.takeQueued()).toBe(false);
    let release!: () => void;
    gate.wait = new Promise<void>((r) => (release = r));
    const pass = dialer.dispatch();
    dialer.noteQueued('t');
    expect(dialer.takeQueued()).toBe(true);
    release();
    await pass;
  });
});

describe('Dialer: a backlog is read ahead', () => {
  /** A tenant with `backlog` due dials and `limit` lines; every line asked for is taken, and each placed dial is refused by leads (its line freed). */
  function backlogged(backlog: number, limit: number) {
    let clock = 1_000;
    const queued = Array.from({ length: backlog }, (_, i) => dial('t', `d${String(i).padStart(4, '0')}`, i));
    const reads = { due: 0 };
    const placed: string[] = [];
    const deps = {
      queue: {
        tenantsWaiting: async () => (queued.length > 0 ? ['t'] : []),
        due: async (_scope: unknown, _now: Date, size: number) => (reads.due++, queued.slice(0, size)),
        remove: async (_scope: unknown, dialId: string) =>
          void queued.splice(
            queued.findIndex((q) => q.dialId === dialId),
            1,
          ),
        removeContact: async (_scope: unknown, contactId: string) =>
          queued.splice(
            queued.findIndex((q) => q.contactId === contactId),
            1,
          ).length,
      },
      lines: {
        held: async () => [],
        takeMany: async (_scope: unknown, callIds: string[]) => new Set(callIds),
        free: async () => undefined,
      },
      settings: { maxConcurrentCalls: async () => limit },
      claims: {
        claim: async (_scope: unknown, _contactId: string, dialId: string) => (
          placed.push(dialId),
          { allowed: false, refusal: 'contact_gone' }
        ),
      },
      calls: { byId: async () => null },
      log,
      now: () => new Date(clock),
      wakeIn: () => undefined,
    } as unknown as DialerDeps;
    const dialer = new Dialer(deps);
    return { dialer, reads, placed, advance: (ms: number) => (clock += ms) };
  }

  it('hands due dials to freed lines from memory, oldest first, and reads again only when the read-ahead is spent', async () => {
    const { dialer, reads, placed } = backlogged(150, 10);
    await dialer.dispatch();
    await dialer.drain();
    expect(reads.due).toBe(1);
    expect(placed).toEqual(Array.from({ length: 10 }, (_, i) => `d${String(i).padStart(4, '0')}`));
    // Ten passes of ten freed lines each: the 110 read are handed out with no other read.
    for (let i = 0; i < 10; i++) {
      await dialer.dispatch();
      await dialer.drain();
    }
    expect(reads.due).toBe(1);
    expect(placed).toHaveLength(110);
    expect(new Set(placed).size).toBe(110);
    // Spent: the next pass reads the rest.
    await dialer.dispatch();
    await dialer.drain();
    expect(reads.due).toBe(2);
    expect(placed.at(-1)).toBe('d0119');
  });

  it('reads again when the read-ahead is older than it may be served, and leaves out a contact forgotten meanwhile', async () => {
    const { dialer, reads, placed, advance } = backlogged(50, 5);
    await dialer.dispatch();
    await dialer.drain();
    await dialer.forgetContact({ tenantId: 't' } as never, 'c5');
    await dialer.dispatch();
    await dialer.drain();
    expect(reads.due).toBe(1);
    expect(placed).not.toContain('d0005');
    expect(placed.slice(5)).toEqual(['d0006', 'd0007', 'd0008', 'd0009', 'd0010']);
    advance(6_000);
    await dialer.dispatch();
    await dialer.drain();
    expect(reads.due).toBe(2);
  });
});

describe('Dialer: the tenants waiting', () => {
  it('are read again for a dial of a tenant not among them, not for each dial of one that is', async () => {
    const gate: { wait?: Promise<void> } = {};
    const { dialer, reads } = dialerWith({ limit: 2, held: { busy: 1 }, due: { busy: 5 } }, gate);
    await dialer.dispatch();
    expect(reads.tenantsWaiting).toBe(1);
    // Dials of the tenant already waiting, queued while a pass runs: the next passes do not read who waits.
    let release!: () => void;
    gate.wait = new Promise<void>((r) => (release = r));
    const pass = dialer.dispatch();
    for (let i = 0; i < 50; i++) dialer.noteQueued('busy');
    release();
    await pass;
    gate.wait = undefined;
    await dialer.dispatch();
    expect(reads.tenantsWaiting).toBe(1);
    // Another tenant's dial: read again.
    dialer.noteQueued('other');
    await dialer.dispatch();
    expect(reads.tenantsWaiting).toBe(2);
  });
});

describe('Dialer: dials queued while the tenants waiting are read', () => {
  it('count their tenants among them, without another read', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const reads = { tenantsWaiting: 0 };
    const seen: string[] = [];
    const deps = {
      queue: {
        // The read began before 'late' queued its first dial.
        tenantsWaiting: async () => (reads.tenantsWaiting++ === 0 ? (await gate, ['early']) : ['early', 'late']),
        due: async () => [],
      },
      lines: {
        held: async (scope: { tenantId: string }) => (seen.push(scope.tenantId), [{ callId: 'x' }]),
        takeMany: async () => new Set<string>(),
      },
      settings: { maxConcurrentCalls: async () => 1 },
      log,
      now: () => new Date(1_000),
      wakeIn: () => undefined,
    } as unknown as DialerDeps;
    const dialer = new Dialer(deps);
    const pass = dialer.dispatch();
    // Dials queued during the read, for a tenant it may have missed and for one it has.
    for (let i = 0; i < 20; i++) dialer.noteQueued(i % 2 ? 'late' : 'early');
    release();
    await pass;
    expect(new Set(seen)).toEqual(new Set(['early', 'late']));
    await dialer.dispatch();
    expect(reads.tenantsWaiting).toBe(1);
  });
});

/**
 * A dispatcher that places the queued dials of tenant `t` (claims allowed, holds placed, rows
 * written), removing each from `queued` as it goes; `over` replaces any of its fakes.
 */
function placingDialer(queued: QueuedDial[], over: Record<string, unknown>): Dialer {
  return new Dialer({
    queue: {
      tenantsWaiting: async () => (queued.length > 0 ? ['t'] : []),
      due: async () => [...queued],
      remove: async (_scope: unknown, dialId: string) =>
        void queued.splice(
          queued.findIndex((q) => q.dialId === dialId),
          1,
        ),
    },
    lines: {
      held: async () => [],
      takeMany: async (_scope: unknown, callIds: string[]) => new Set(callIds),
      free: async () => undefined,
    },
    settings: { maxConcurrentCalls: async () => 10 },
    claims: { claim: async () => ({ allowed: true, campaignId: 'k', maxCallSeconds: 60 }) },
    calls: {
      create: async () => true,
      byId: async () => null,
      setRinging: async (callId: string) => ({ id: callId, status: 'ringing' }),
    },
    runner: { announce: async () => undefined, placeHold: async () => 'placed', run: async () => null },
    log,
    platformNumber: '+18885550100',
    wakeIn: () => undefined,
    ...over,
  } as unknown as DialerDeps);
}

describe('Dialer: the dial delay', () => {
  it("records, once a lead's first attempt rings, the seconds since the lead could be dialled; not for a later attempt, a dial queued without the time, or one that does not ring", async () => {
    const requestedAt = new Date(1_000);
    const queued: QueuedDial[] = [
      { ...dial('t', 'c1:1', 1), attempt: 1, requestedAt },
      { ...dial('t', 'c2:3', 2), attempt: 2, requestedAt },
      { ...dial('t', 'c3:1', 3), attempt: 1 },
      { ...dial('t', 'c4:1', 4), attempt: 1, requestedAt },
    ];
    const delays: number[] = [];
    const dialer = placingDialer(queued, {
      calls: {
        create: async () => true,
        byId: async () => null,
        setRinging: async (callId: string) =>
          callId === outboundCallId('t', 'c4:1') ? null : { id: callId, status: 'ringing' },
      },
      now: () => new Date(43_500),
      metrics: { dials: { add: () => undefined }, dialDelay: { record: (s: number) => delays.push(s) } },
    });
    await dialer.dispatch();
    await dialer.drain();
    expect(delays).toEqual([42.5]);
  });
});

describe("Dialer: a lead that waited for its tenant's lines", () => {
  it('is recorded waited_for_lines once a pass found every line busy after it could be dialled; the dial that took the last line is not', async () => {
    const requestedAt = new Date(1_000);
    const queued: QueuedDial[] = [
      { ...dial('t', 'c1:1', 1), attempt: 1, requestedAt },
      { ...dial('t', 'c2:1', 2), attempt: 1, requestedAt },
    ];
    const recorded: string[] = [];
    let now = 2_000;
    const dialer = placingDialer(queued, {
      // One line, free at every pass (the call before ended).
      lines: {
        held: async () => [],
        takeMany: async (_scope: unknown, callIds: string[]) => new Set(callIds.slice(0, 1)),
        free: async () => undefined,
      },
      settings: { maxConcurrentCalls: async () => 1 },
      now: () => new Date(now),
      metrics: {
        dials: { add: () => undefined },
        dialDelay: { record: (_s: number, a: { waited_for_lines: string }) => recorded.push(a.waited_for_lines) },
      },
    });
    await dialer.dispatch();
    await dialer.drain();
    now = 90_000;
    await dialer.dispatch();
    await dialer.drain();
    expect(recorded).toEqual(['false', 'true']);
  });
});
