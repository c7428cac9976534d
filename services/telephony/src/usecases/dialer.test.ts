import type { Logger } from '@voiceapi/kit';
import type { QueuedDial } from '../domain/dial';
import { Dialer, type DialerDeps } from './dialer';

const log = { warn: jest.fn(), info: jest.fn(), error: jest.fn(), debug: jest.fn() } as unknown as Logger;

/** A dispatcher over fakes: `lines` held per tenant, `due` dials per tenant; no dial is placed (no line is ever free with dials due). */
function dialerWith(state: { limit: number; held: Record<string, number>; due: Record<string, number> }, gate: { wait?: Promise<void> } = {}) {
  const dial = (tenantId: string, i: number): QueuedDial => ({
    tenantId,
    dialId: `${tenantId}-${i}`,
    contactId: `c${i}`,
    campaignId: 'k',
    phone: '+14155550100',
    maxCallSeconds: 60,
    queuedAt: new Date(0),
    notBefore: new Date(0),
  });
  const reads = { tenantsWaiting: 0, due: 0 };
  const deps = {
    queue: {
      tenantsWaiting: async () => (reads.tenantsWaiting++, Object.keys(state.due)),
      due: async (scope: { tenantId: string }) => (reads.due++, Array.from({ length: state.due[scope.tenantId] ?? 0 }, (_, i) => dial(scope.tenantId, i))),
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
