import { retryTransient } from '@voiceapi/kit/errors';
import {
  broadcastGroup,
  broadcastGroupPrefix,
  consumerGroup,
  EventSubscriber,
  removeIdleBroadcastGroups,
  type StartedEvents,
} from '@voiceapi/kit/events';
import type { Lease } from '@voiceapi/kit/mongo';
import type { Logger, OpenedService } from '@voiceapi/kit/service';
import { Worker } from '@voiceapi/kit/work';
import type { Config } from '../config';
import { followCallOutcomes, followCredit, sendRequestedMessages } from '../events/consume';
import type { Dialing } from '../usecases/dialing';
import type { Stores } from './stores';
import type { UseCases } from './usecases';

const SCHEDULER_BATCH = 200;
/** The scheduler's look for other replicas' items while one contends (no change stream, decision 0141). */
const SCHEDULER_LOOK_MS = 1_000;
/** How far back the next relay holder re-requests dials (decision 0149). */
const REANNOUNCE_WINDOW_MS = 10 * 60_000;
/** Lets a write the previous holder began land or fail first. */
const REANNOUNCE_AFTER_MS = 10_000;

export function startConsumers(
  { cfg, log, lifecycle }: OpenedService<Config>,
  { kafka, publisher }: StartedEvents,
  { credits, api }: UseCases,
): void {
  // Any replica may take a tenant's next lead, so each hears every wallet's credit in its own broadcast group.
  const creditNews = followCredit(
    new EventSubscriber(kafka, {
      group: broadcastGroup('leads', 'credit-view', cfg.INSTANCE_ID),
      log,
      publisher,
      fromBeginning: false,
      removeGroupOnStop: true,
      concurrency: 256,
      keyOrder: false,
    }),
    credits,
  );
  creditNews.start();
  lifecycle.onStop('credit view consumer', () => creditNews.stop());
  // Groups of replicas that died without removing their own.
  void removeIdleBroadcastGroups(kafka, broadcastGroupPrefix('leads', 'credit-view'), log).catch((err: unknown) =>
    log.warn({ err }, 'could not look for idle broadcast groups'),
  );

  // No inbox: both consumers are idempotent by the state they change, and an inbox would cost two writes
  // per dial request on the stream they share.
  const outcomes = followCallOutcomes(
    new EventSubscriber(kafka, { group: consumerGroup('leads', 'call-outcomes'), log, publisher }),
    api.dialing,
  );
  outcomes.start();
  lifecycle.onStop('call-outcome consumer', () => outcomes.stop());
  const sender = sendRequestedMessages(
    new EventSubscriber(kafka, { group: consumerGroup('leads', 'message-sender'), log, publisher, concurrency: 16 }),
    api.messaging,
  );
  sender.start();
  lifecycle.onStop('message sender', () => sender.stop());
}

/** The scheduler, and the dials re-requested when its lease (the outbox relay's too) is taken over; returns the scheduler. */
export function startWorkers(
  { cfg, log, lifecycle }: OpenedService<Config>,
  lease: Lease,
  { schedule }: Stores,
  { api: { dialing } }: UseCases,
): Worker {
  // On one replica at a time, woken by its own schedules and the next due item; other replicas' items are
  // found by its look (no change stream, decision 0141). A full batch is followed by another at once.
  const scheduler: Worker = new Worker({
    service: 'leads',
    job: 'scheduler',
    everyMs: cfg.SCHEDULER_INTERVAL_MS,
    lookMs: SCHEDULER_LOOK_MS,
    gatherMs: 50,
    lease,
    log,
    pass: async () => {
      const { handled, nextDueAt } = await dialing.dispatchDue(SCHEDULER_BATCH);
      if (nextDueAt) scheduler.wakeIn(nextDueAt.getTime() - Date.now());
      return handled === SCHEDULER_BATCH ? 'more' : 'done';
    },
  });
  schedule.onScheduled((dueAt) => scheduler.wakeIn(dueAt.getTime() - Date.now()));
  scheduler.start();
  lifecycle.onStop('scheduler', () => scheduler.stop());
  const requestAgain = reannounceOnTake(lease, dialing, log);
  lifecycle.onStop('dial requests again', requestAgain.stop);
  return scheduler;
}

/** A relay holder may die between a contact's write and its dial request (decision 0149); the next re-requests. */
function reannounceOnTake(lease: Lease, dialing: Dialing, log: Logger): { stop: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const taken = () => {
    const since = new Date(Date.now() - REANNOUNCE_WINDOW_MS);
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (!lease.held) return;
      // A takeover often comes with store trouble: retried for a while.
      retryTransient(() => dialing.reannounceQueued(since), {
        deadline: Date.now() + REANNOUNCE_WINDOW_MS,
        onRetry: (err) => log.warn({ err }, 'requesting again the dials of queued contacts failed; trying again'),
      }).then(
        (n) =>
          n > 0 && log.info({ requested: n }, 'dials of queued contacts requested again after the lease was taken'),
        (err: unknown) => log.error({ err }, 'dials of queued contacts could not be requested again'),
      );
    }, REANNOUNCE_AFTER_MS).unref();
  };
  lease.onTaken(taken);
  if (lease.held) taken();
  return { stop: () => clearTimeout(timer) };
}
