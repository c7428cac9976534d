import { startSystem, type System } from '../harness/system';
import { sleep } from '../harness/wait';
import { callsAcross, connect, serviceEnv, type Conns } from './calls-across';

// Two replicas each of telephony, billing and webhooks, as the charts deploy them. Mid-stream the
// telephony replica holding the dispatcher lease and the billing replica telephony settles calls
// with die without warning: the lease moves to the other telephony replica (it may place no dial
// twice); the calls that end while billing is away end pending and are settled again once it is
// back (no call charged twice, and two writers of one tenant's wallet never leave a gap or a
// double row). The scenario and its checks: ./calls-across.ts.
describe('replicas killed mid-stream', () => {
  let sys: System;
  let conn: Conns;
  jest.setTimeout(360_000);

  beforeAll(async () => {
    sys = await startSystem({ gateways: 0, serviceEnv });
    for (const name of ['telephony', 'billing', 'webhooks']) await sys.startReplica(name);
    conn = await connect(sys);
  });
  afterAll(async () => {
    await conn?.telephony.close();
    await conn?.billing.close();
    await sys?.stop();
  });

  it('dials each lead once and charges each call once when a replica of each dies', async () => {
    let killed: string | undefined;
    await callsAcross(sys, conn, async () => {
      // The telephony replica placing the dials now: the one holding the dispatcher's lease.
      const lease = await conn.telephony
        .collection<{ _id: string; holder: string }>('leases')
        .findOne({ _id: 'telephony-dispatcher' });
      const telephony = sys.replicasOf('telephony');
      const holder = telephony.find((r) => r.instanceId === lease?.holder);
      expect(holder).toBeDefined();
      killed = holder!.instanceId;
      // And the billing replica other services call: settlements and holds fail until it is back.
      const billing = sys.services.billing!;
      holder!.proc.child.kill('SIGKILL');
      billing.child.kill('SIGKILL');
      await Promise.all([holder!.proc.stop(), billing.stop()]);
      await sleep(1_000);
      // Each comes back at its address (as a Kubernetes Service would route to the survivor); the
      // telephony lease stays where it moved.
      await sys.startService('billing');
      if (holder!.proc === sys.services.telephony) await sys.startService('telephony');
    });
    // The dials after the kill were placed under a lease that had moved.
    const lease = await conn.telephony
      .collection<{ _id: string; holder: string }>('leases')
      .findOne({ _id: 'telephony-dispatcher' });
    expect(lease?.holder).toBeDefined();
    expect(lease?.holder).not.toBe(killed);
  });
});
