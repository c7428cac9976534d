import type { Lease, Logger } from '@voiceapi/kit';
import { Dialer, type DialerDeps } from './dialer';

const flush = () => new Promise((r) => setImmediate(r));

// The dispatcher's coalescing, without stores: what matters here is when a pass runs, not what it does.
function dialerWith(lease: { held: boolean }) {
  const log = { warn: jest.fn(), info: jest.fn(), error: jest.fn(), debug: jest.fn() } as unknown as Logger;
  const waiting = jest.fn(async () => [] as string[]);
  const deps = { queue: { tenantsWaiting: waiting }, lease: lease as Lease, log, now: () => new Date(), intervalMs: 60_000 } as unknown as DialerDeps;
  return { dialer: new Dialer(deps), waiting };
}

describe('dialer dispatch', () => {
  it('dispatches once the lease is won, after passes that found it held elsewhere', async () => {
    // A replica started while another still held the lease (a restart after a crash): its first
    // passes end at once; the pass after the lease is won must still run.
    const lease = { held: false };
    const { dialer, waiting } = dialerWith(lease);
    dialer.nudge();
    await flush();
    dialer.nudge();
    await flush();
    expect(waiting).not.toHaveBeenCalled();
    lease.held = true;
    dialer.nudge();
    await flush();
    expect(waiting).toHaveBeenCalledTimes(1);
    dialer.nudge();
    await flush();
    expect(waiting).toHaveBeenCalledTimes(2);
    await dialer.stop();
  });

  it('coalesces nudges during a pass into one more pass', async () => {
    const { dialer, waiting } = dialerWith({ held: true });
    dialer.nudge();
    dialer.nudge();
    dialer.nudge();
    await flush();
    await flush();
    expect(waiting).toHaveBeenCalledTimes(2);
    await dialer.stop();
  });
});
