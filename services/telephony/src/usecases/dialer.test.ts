// Over 300 lines because the cases of one module share its fixtures.
import type { Logger } from '@voiceapi/kit/service';
import { outboundCallId, type Call } from '../domain/call';
import type { QueuedDial } from '../domain/dial';
import { Dialer, type DialerDeps } from './dialer';
import { HeldDials } from './held-dials';

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

/** A tenant's scope, as the dialer is given it. */
const scope = (tenantId: string) => ({ tenantId }) as never;
/** A dial request of tenant `t`'s i-th contact, as consumed. */
const request = (dialId: string, i: number) => {
  const { tenantId: _t, queuedAt: _q, notBefore: _n, ...req } = dial('t', dialId, i);
  return req;
};

/** The dials held, each released into `released` once placed or dropped. */
function holding(dials: readonly QueuedDial[], released: string[] = []): HeldDials {
  const held = new HeldDials();
  for (const d of dials) held.add(d, () => void released.push(d.dialId));
  return held;
}

/** A dispatcher over fakes: `lines` held per tenant, `due` dials held per tenant; no line is ever free to take. */
function dialerWith(
  state: { limit: number; held: Record<string, number> },
  due: Record<string, number>,
  gate: { wait?: Promise<void> } = {},
) {
  const wakes = { count: 0 };
  const queue = holding(
    Object.entries(due).flatMap(([tenantId, n]) =>
      Array.from({ length: n }, (_, i) => dial(tenantId, `${tenantId}-${i}`, i)),
    ),
  );
  const deps = {
    queue,
    lines: {
      held: async (s: { tenantId: string }) => {
        await gate.wait;
        return Array.from({ length: state.held[s.tenantId] ?? 0 }, (_, i) => ({ callId: `held-${i}` }));
      },
      takeMany: async () => new Set<string>(),
    },
    settings: { maxConcurrentCalls: async () => state.limit },
    log,
    now: () => new Date(1_000),
    wake: () => void wakes.count++,
    wakeIn: () => undefined,
  } as unknown as DialerDeps;
  return { dialer: new Dialer(deps), wakes, queue };
}

describe('Dialer: which dials held call for a pass', () => {
  it("a dial of a tenant whose lines are all taken, with dials waiting, calls for none (a freed line does); another tenant's does", async () => {
    const { dialer, wakes } = dialerWith({ limit: 2, held: { busy: 2 } }, { busy: 5 });
    await dialer.dispatch();
    expect(dialer.waitingForLines).toBe(true);
    dialer.enqueue({ tenantId: 'busy' } as never, { ...request('busy-new', 9) }, () => undefined);
    expect(wakes.count).toBe(0);
    dialer.enqueue({ tenantId: 'idle' } as never, { ...request('idle-1', 1) }, () => undefined);
    expect(wakes.count).toBe(1);
  });

  it('a redelivered request is held once and calls for no second pass; both deliveries are released with the dial', async () => {
    const released: string[] = [];
    const { dialer, wakes, queue } = dialerWith({ limit: 2, held: {} }, {});
    dialer.enqueue(scope('t'), request('t:1', 1), () => void released.push('first'));
    dialer.enqueue(scope('t'), request('t:1', 1), () => void released.push('again'));
    expect(wakes.count).toBe(1);
    expect(queue.size).toBe(1);
    queue.remove(scope('t'), 't:1');
    expect(released).toEqual(['first', 'again']);
  });

  it('a dial held while a pass is under way calls for another pass (the pass may leave lines free)', async () => {
    const gate: { wait?: Promise<void> } = {};
    const { dialer, wakes } = dialerWith({ limit: 1, held: { t: 1 } }, { t: 2 }, gate);
    await dialer.dispatch();
    let release!: () => void;
    gate.wait = new Promise<void>((r) => (release = r));
    const pass = dialer.dispatch();
    dialer.enqueue(scope('t'), request('t-late', 7), () => undefined);
    expect(wakes.count).toBe(1);
    release();
    await pass;
  });
});

describe('Dialer: a backlog', () => {
  it("goes to freed lines oldest first, each dial released once it is dropped, and a forgotten contact's dials are released unplaced", async () => {
    const released: string[] = [];
    const queue = holding(
      Array.from({ length: 30 }, (_, i) => dial('t', `d${String(i).padStart(4, '0')}`, i)),
      released,
    );
    const placed: string[] = [];
    const dialer = new Dialer({
      queue,
      lines: {
        held: async () => [],
        takeMany: async (_scope: unknown, callIds: string[]) => new Set(callIds),
        free: async () => undefined,
      },
      settings: { maxConcurrentCalls: async () => 10 },
      claims: {
        claim: async (_scope: unknown, _contactId: string, dialId: string) => (
          placed.push(dialId),
          { allowed: false, refusal: 'contact_gone' }
        ),
      },
      calls: { byId: async () => null },
      log,
      now: () => new Date(1_000),
      wake: () => undefined,
      wakeIn: () => undefined,
    } as unknown as DialerDeps);
    await dialer.dispatch();
    await dialer.drain();
    expect(placed).toEqual(Array.from({ length: 10 }, (_, i) => `d${String(i).padStart(4, '0')}`));
    await dialer.forgetContact(scope('t'), 'c10');
    await dialer.dispatch();
    await dialer.drain();
    expect(placed).not.toContain('d0010');
    expect(placed.slice(10)).toEqual(Array.from({ length: 10 }, (_, i) => `d${String(i + 11).padStart(4, '0')}`));
    expect(released).toHaveLength(21);
    expect(queue.size).toBe(9);
  });
});

/**
 * A dispatcher that places the queued dials of tenant `t` (claims allowed, holds placed, rows
 * written), removing each from `queued` as it goes; `over` replaces any of its fakes.
 */
function placingDialer(queued: QueuedDial[], over: Record<string, unknown>): Dialer {
  // Held as consumed; a dial released (placed or dropped) leaves `queued`.
  const queue = new HeldDials();
  for (const q of [...queued]) queue.add(q, () => void queued.splice(queued.indexOf(q) >>> 0, 1));
  return new Dialer({
    queue,
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
    wake: () => undefined,
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

describe("Dialer: leads' first attempts, in time or late (the lead-to-dial SLO)", () => {
  it('counts a first attempt late the moment its minute passes while billing is away, once, and one placed at once in time', async () => {
    let now = 2_000;
    const queued: QueuedDial[] = [
      { ...dial('t', 'c1:1', 1), attempt: 1, requestedAt: new Date(1_000) },
      { ...dial('t', 'c2:1', 2), attempt: 1, requestedAt: new Date(1_000) },
    ];
    const counted: Record<string, number> = {};
    let billingAway = false;
    const dialer = placingDialer(queued, {
      runner: {
        announce: async () => undefined,
        // Billing away: no hold can be placed, every try fails and is retried.
        placeHold: async (call: Call) => {
          if (billingAway && call.id === outboundCallId('t', 'c2:1')) throw new Error('billing unavailable');
          return 'placed';
        },
        run: async () => null,
      },
      now: () => new Date(now),
      metrics: {
        dials: { add: () => undefined },
        firstDials: { add: (n: number, a: { late: string }) => void (counted[a.late] = (counted[a.late] ?? 0) + n) },
      },
    });
    expect(counted).toEqual({ false: 0, true: 0 }); // both series from the start
    billingAway = true;
    await dialer.dispatch();
    await dialer.drain();
    expect(counted).toEqual({ false: 1, true: 0 }); // c1 rang; c2 waits to be tried again
    now = 61_000; // c2's minute is not past yet
    await new Promise((r) => setTimeout(r, 1_200));
    expect(counted.true).toBe(0);
    now = 61_002;
    await new Promise((r) => setTimeout(r, 1_200)); // the count's own sweep
    expect(counted).toEqual({ false: 1, true: 1 });
    // Billing back: c2 rings, and is not counted again.
    billingAway = false;
    now = 90_000;
    await dialer.dispatch();
    await dialer.drain();
    expect(queued).toEqual([]);
    expect(counted).toEqual({ false: 1, true: 1 });
  });
});

/** A tenant of one line, free at every pass; as the store's, the lines a pass takes join the lines it read. */
const oneLine = {
  lines: {
    held: async () => [],
    takeMany: async (_scope: unknown, callIds: string[], _limit: number, _now: Date, held: unknown[]) => {
      held.push(...callIds.slice(0, 1).map((callId) => ({ callId })));
      return new Set(callIds.slice(0, 1));
    },
    free: async () => undefined,
  },
  settings: { maxConcurrentCalls: async () => 1 },
};

describe('Dialer: lines filled by tries of ours that fail', () => {
  it("never excuse a first attempt as waiting for the tenant's lines: both leads count late", async () => {
    let now = 2_000;
    const queued: QueuedDial[] = [
      { ...dial('t', 'c1:1', 1), attempt: 1, requestedAt: new Date(1_000) },
      { ...dial('t', 'c2:1', 2), attempt: 1, requestedAt: new Date(1_000) },
    ];
    const counted: Record<string, number> = {};
    const dialer = placingDialer(queued, {
      // One line; each failing try frees it again.
      ...oneLine,
      runner: {
        announce: async () => undefined,
        placeHold: async () => Promise.reject(new Error('billing unavailable')),
        run: async () => null,
      },
      now: () => new Date(now),
      metrics: {
        dials: { add: () => undefined },
        firstDials: { add: (n: number, a: { late: string }) => void (counted[a.late] = (counted[a.late] ?? 0) + n) },
      },
    });
    await dialer.dispatch(); // c1 takes the only line (c2 left waiting: the lines look full) and fails
    await dialer.drain();
    now = 3_000;
    await dialer.dispatch(); // c2 tries and fails
    await dialer.drain();
    now = 61_002;
    await new Promise((r) => setTimeout(r, 1_200)); // the count's own sweep
    expect(counted).toEqual({ false: 0, true: 2 });
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
      ...oneLine,
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
        placeHold: async () => (steps.push('hold placed'), dialer.forgetContact(scope('t'), 'c1'), 'placed'),
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

describe('Dialer: a backlog held long (decision 0147)', () => {
  it("is written to the dial queue and let go, its requests' offsets released; dials held from the queue stay", async () => {
    const released: string[] = [];
    const queue = new HeldDials();
    const source = { topic: 'leads.dial.v1', partition: 0 };
    queue.add(dial('t', 'old', 1), () => void released.push('old'), source, 1_000);
    queue.add(dial('t', 'young', 2), () => void released.push('young'), source, 39_000);
    queue.add(dial('t', 'from-queue', 3), () => void released.push('from-queue'), undefined, 1_000);
    const kept: string[][] = [];
    let woken = 0;
    let now = 40_000;
    const dialer = new Dialer({
      queue,
      spill: {
        keep: async (dials: QueuedDial[]) => void kept.push(dials.map((d) => d.dialId)),
        kept: () => void woken++,
      },
      lines: { held: async () => [{ callId: 'busy' }], takeMany: async () => new Set<string>() },
      settings: { maxConcurrentCalls: async () => 1 },
      log,
      now: () => new Date(now),
      wake: () => undefined,
      wakeIn: () => undefined,
    } as unknown as DialerDeps);
    await dialer.dispatch();
    expect(kept).toEqual([['old']]);
    expect(released).toEqual(['old']);
    expect(woken).toBe(1);
    expect(queue.due(scope('t'), new Date(now), 10).map((d) => d.dialId)).toEqual(['young', 'from-queue']);
    // Looked for at most every 15 s.
    now = 50_000;
    await dialer.dispatch();
    expect(kept).toHaveLength(1);
    now = 70_000;
    await dialer.dispatch();
    expect(kept).toEqual([['old'], ['young']]);
  });
});
