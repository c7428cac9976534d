import { scopeOfRecord } from '@voiceapi/kit/grpc';
import type { DialQueueStore } from '../store/dial-queue-store';
import type { HeldDials } from '../usecases/held-dials';

/** A tenant's queued dials held from the queue at once, at most (more are taken as those are placed). */
const FROM_QUEUE = 500;

/**
 * On the lease holder, holds the dials in `dial_queue` (decision 0147: spilled, or queued by releases before 0147)
 * like consumed requests, each document deleted once placed or dropped; up to `FROM_QUEUE` per tenant.
 */
export async function takeOverQueued(store: DialQueueStore, held: HeldDials, wake: () => void): Promise<number> {
  let taken = 0;
  const now = new Date();
  for (const tenantId of await store.tenantsWaiting()) {
    const scope = scopeOfRecord(tenantId);
    const room = FROM_QUEUE - held.fromQueue(tenantId);
    if (room <= 0) continue;
    for (const dial of await store.due(scope, now, room)) {
      if (held.has(scope, dial.dialId)) continue;
      held.add(dial, () => void store.remove(scope, dial.dialId).catch(() => undefined));
      taken++;
    }
  }
  if (taken > 0) wake();
  return taken;
}
