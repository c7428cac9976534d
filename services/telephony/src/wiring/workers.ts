import { consumerGroup, EventSubscriber, type StartedEvents } from '@voiceapi/kit/events';
import type { Lease } from '@voiceapi/kit/mongo';
import type { OpenedService } from '@voiceapi/kit/service';
import { Worker } from '@voiceapi/kit/work';
import type { Config } from '../config';
import { followCallFeed, followLeads } from '../events/consume';
import { backgroundWorkers } from '../workers/background';
import { takeOverQueued } from '../workers/queue-takeover';
import { Recovery } from '../workers/recovery';
import { RollupRecompute } from '../workers/rollups';
import type { Stores } from './stores';
import type { UseCases } from './usecases';

/** The dial workers' wakes, for the dialer and the held dials, which are made before them (and which they run). */
export class DialWakes {
  private dispatching?: Worker;
  private takingOver?: Worker;

  bind(dispatching: Worker, takingOver: Worker): void {
    this.dispatching = dispatching;
    this.takingOver = takingOver;
  }

  dispatch(): void {
    this.dispatching!.wake();
  }

  dispatchIn(ms: number): void {
    this.dispatching!.wakeIn(ms);
  }

  takeOver(): void {
    this.takingOver!.wake();
  }
}

/** Every worker, each started and stopped through the lifecycle; the dispatcher on every replica, the rest on `lease`. */
export function startWorkers(
  { cfg, log, lifecycle }: OpenedService<Config>,
  lease: Lease,
  { lines, leftovers, settings, calls, rollups }: Stores,
  { held, dialer, runner, carrier, keeper, feed }: UseCases,
  wakes: DialWakes,
) {
  // Woken by a new dial, a line freed while dials wait (any replica), or a package set; the timer is a safety net.
  const dispatching = new Worker({
    service: 'telephony',
    job: 'dial-dispatch',
    everyMs: cfg.DISPATCH_INTERVAL_MS,
    wakeOn: [{ ...lines.changes(), wakes: () => dialer.waitingForLines }],
    gatherMs: 50,
    log,
    pass: async () => void (await dialer.dispatch()),
    drain: () => dialer.drain(),
  });
  settings.onChange(() => dispatching.wake());
  // Holds dials spilled to the dial queue by any replica (or queued by releases before 0147) until placed.
  const takingOver = new Worker({
    service: 'telephony',
    job: 'dial-queue-takeover',
    everyMs: cfg.RECOVERY_INTERVAL_MS,
    // Woken as dials held from the queue are placed: one look a second at most while a backlog drains.
    gatherMs: 1_000,
    lease,
    log,
    pass: async () => void (await takeOverQueued(leftovers, held, () => dispatching.wake())),
  });
  wakes.bind(dispatching, takingOver);
  const recovery = new Recovery({
    lines,
    calls,
    waiting: async (scope, dialId) => held.has(scope, dialId) || (await leftovers.has(scope, dialId)),
    runner,
    carrier,
    log,
    now: () => new Date(),
    isDispatching: (id) => dialer.isDispatching(id),
  });
  const recompute = new RollupRecompute({ rollups, calls });
  const workers = [
    dispatching,
    takingOver,
    ...backgroundWorkers({ cfg, lease, log, recovery, runner, keeper, recompute, rollups, feed }),
  ];
  for (const w of workers) {
    w.start();
    lifecycle.onStop(w.spec.job, () => w.stop());
  }
  return { dispatching, recovery };
}

/** Started once the server listens: joining a group whose last member was killed waits out its session. */
export function startConsumers(
  { log, lifecycle }: OpenedService<Config>,
  { kafka, publisher }: StartedEvents,
  { held, dialer, feed, api }: UseCases,
  dispatching: Worker,
): void {
  // No inbox: queueing is idempotent by dial id, erasure by contact, the feed by change id.
  const dialRequests = followLeads(
    new EventSubscriber(kafka, {
      group: consumerGroup('telephony', 'dial-requests'),
      log,
      publisher,
      concurrency: 16,
      // A dial's request stays uncommitted until the dial is placed or dropped (decision 0147).
      holdCommits: { revoked: (topic, partitions) => void held.revoke(topic, partitions) },
    }),
    dialer,
    api.calls,
  );
  // Keyed by tenant, in order per key: one tenant's changes are written one after the other.
  const feedWriter = followCallFeed(
    new EventSubscriber(kafka, { group: consumerGroup('telephony', 'call-feed'), log, publisher, concurrency: 16 }),
    feed,
  );
  // Left together: each leaves its group on its own, and one after the other they could outlast the pod's grace period.
  lifecycle.onStop('consumers', async () => {
    // No dial starts once the group is left: what is still held goes to the partitions' next owner.
    await dispatching.stop();
    await Promise.all([dialRequests.stop(), feedWriter.stop()]);
  });
  dialRequests.start();
  feedWriter.start();
}
