// Over 300 lines because the cases of one module share its fixtures.
import type { Logger } from '@voiceapi/kit';
import { outboundCallId, type Call } from '../domain/call';
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
      stillQueued: async (_scope: unknown, dialId: string) => queued.some((q) => q.dialId === dialId),
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
    // c4's row another try wrote (and carries): this try does not ring it.
    const carriedElsewhere = outboundCallId('t', 'c4:1');
    const dialer = placingDialer(queued, {
      calls: {
        create: async (_scope: unknown, call: Call) => call.id !== carriedElsewhere,
        byId: async (callId: string) => (callId === carriedElsewhere ? { id: callId, status: 'ringing' } : null),
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

describe('Dialer: a dial that gets its call (decision 0145)', () => {
  /** What the fakes saw, in order. */
  const steps: string[] = [];
  const recording = (rows: Record<string, Call>, hold: 'placed' | 'insufficient') => ({
    calls: {
      create: async (_scope: unknown, call: Call) => {
        if (rows[call.id]) return false;
        rows[call.id] = call;
        steps.push(`row ${call.status}`);
        return true;
      },
      byId: async (callId: string) => rows[callId] ?? null,
      setRinging: async (callId: string) => {
        steps.push('row queued → ringing');
        rows[callId] = { ...rows[callId]!, status: 'ringing' };
        return rows[callId];
      },
      erasePersonalData: async (_scope: unknown, callId: string) => void steps.push(`row ${callId} erased`),
    },
    runner: {
      announce: async (call: Call, change: string) => void steps.push(`${change} (${call.status})`),
      placeHold: async () => (steps.push(`hold ${hold}`), hold),
      finish: async (_call: Call, _r: unknown, reason: string) => void steps.push(`ended ${reason}`),
      finishRetrying: async (_call: Call, _r: unknown, reason: string) => void steps.push(`ended ${reason}`),
      run: async (call: Call) => (steps.push(`carrier asked (${call.status})`), null),
    },
  });
  beforeEach(() => void steps.splice(0));

  it('has its hold placed, then its row written once, ringing, and announced started and ringing', async () => {
    const queued = [dial('t', 'c1:1', 1)];
    const dialer = placingDialer(queued, { ...recording({}, 'placed'), now: () => new Date(5_000) });
    await dialer.dispatch();
    await dialer.drain();
    expect(steps).toEqual([
      'hold placed',
      'row ringing',
      'call.started (ringing)',
      'call.ringing (ringing)',
      'carrier asked (ringing)',
    ]);
    expect(queued).toEqual([]);
  });

  it('rings a row an earlier release left queued, from queued, as that release did', async () => {
    const queued = [dial('t', 'c1:1', 1)];
    const id = outboundCallId('t', 'c1:1');
    const rows: Record<string, Call> = { [id]: { id, tenantId: 't', status: 'queued' } as Call };
    const dialer = placingDialer(queued, {
      ...recording(rows, 'placed'),
      claims: { claim: async () => ({ allowed: false, refusal: 'already_claimed' }) },
      now: () => new Date(5_000),
    });
    await dialer.dispatch();
    await dialer.drain();
    expect(steps).toEqual(['hold placed', 'row queued → ringing', 'call.ringing (ringing)', 'carrier asked (ringing)']);
  });

  it('without credit for its hold, writes the call queued and ends it insufficient_credits', async () => {
    const queued = [dial('t', 'c1:1', 1)];
    const dialer = placingDialer(queued, { ...recording({}, 'insufficient'), now: () => new Date(5_000) });
    await dialer.dispatch();
    await dialer.drain();
    expect(steps).toEqual(['hold insufficient', 'row queued', 'call.started (queued)', 'ended insufficient_credits']);
    expect(queued).toEqual([]);
  });

  it('whose contact was erased while its hold was placed: its row loses the numbers and ends not_dialled, never announced or dialled', async () => {
    const queued = [dial('t', 'c1:1', 1)];
    const id = outboundCallId('t', 'c1:1');
    let claims = 0;
    const dialer = placingDialer(queued, {
      ...recording({}, 'placed'),
      // Telephony heard of the erasure while billing answered: the contact's dials are dropped.
      runner: {
        ...recording({}, 'placed').runner,
        placeHold: async () => (steps.push('hold placed'), queued.splice(0), 'placed'),
      },
      claims: {
        claim: async () =>
          claims++ === 0
            ? { allowed: true, campaignId: 'k', maxCallSeconds: 60 }
            : { allowed: false, refusal: 'not_found' },
      },
      now: () => new Date(5_000),
    });
    await dialer.dispatch();
    await dialer.drain();
    expect(steps).toEqual(['hold placed', 'row ringing', `row ${id} erased`, 'ended not_dialled']);
  });

  it('rings when an announcement fails, and when its insert answered an error but wrote its row', async () => {
    const queued = [dial('t', 'c1:1', 1)];
    const rows: Record<string, Call> = {};
    const r = recording(rows, 'placed');
    const dialer = placingDialer(queued, {
      ...r,
      calls: {
        ...r.calls,
        create: async (scope: unknown, call: Call) => {
          await r.calls.create(scope, call);
          throw new Error('the store answered with an error after writing');
        },
      },
      runner: {
        ...r.runner,
        announce: async () => {
          throw new Error('the outbox is away');
        },
      },
      now: () => new Date(5_000),
    });
    await dialer.dispatch();
    await dialer.drain();
    expect(steps).toEqual(['hold placed', 'row ringing', 'carrier asked (ringing)']);
  });
});
