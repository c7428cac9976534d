import { consumerGroup, EventSubscriber, type StartedEvents } from '@voiceapi/kit/events';
import type { OpenedService } from '@voiceapi/kit/service';
import type { Config } from '../config';
import { deliverDomainEvents } from '../events/consume';
import type { UseCases } from './usecases';

/** The dispatcher: first attempts, retries when due, and what other replicas left (its own sweep worker). */
export function startWorkers({ lifecycle }: OpenedService<Config>, { dispatcher }: UseCases): void {
  dispatcher.start();
  lifecycle.onStop('dispatcher', () => dispatcher.stop());
}

export function startConsumers(
  { cfg, log, lifecycle }: OpenedService<Config>,
  { kafka, publisher }: StartedEvents,
  { fanOut }: UseCases,
): void {
  const consumer = deliverDomainEvents(
    new EventSubscriber(kafka, {
      group: consumerGroup('webhooks', 'fan-out'),
      log,
      publisher,
      concurrency: cfg.WEBHOOK_FANOUT_CONCURRENCY,
      keyOrder: false,
    }),
    fanOut,
  );
  consumer.start();
  // Hooks run in reverse: no new deliveries while the dispatcher hands back what it holds.
  lifecycle.onStop('fan-out consumer', () => consumer.stop());
}
