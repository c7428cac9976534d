import { scopeOfRecord } from '@voiceapi/kit';
import type { DialQueueStore } from '../store/dial-queue-store';
import type { HeldDials } from '../usecases/held-dials';

/** A tenant's queued dials held from the queue at once, at most (more are taken as those are placed). */
const FROM_QUEUE = 500;

/**
 * Holds, on the lease holder, the dials waiting in `dial_queue` (decision 0147): a backlog's, which
 * any replica writes there once they waited long, and any a replica of a release before 0147
 * queued. Each is held like a consumed request, its document deleted once it is placed or dropped;
 * a dial held already is left alone. Per tenant, up to `FROM_QUEUE` at a time, due ones oldest first.
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
