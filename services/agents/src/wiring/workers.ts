import { consumerGroup, EventSubscriber, type StartedEvents } from '@voiceapi/kit/events';
import type { OpenedService } from '@voiceapi/kit/service';
import { Worker } from '@voiceapi/kit/work';
import type { Config } from '../config';
import { followScriptInputs } from '../events/consume';
import type { Agents } from '../usecases/agents';
import type { Stores } from './stores';

export function startWorkers({ cfg, log, lifecycle }: OpenedService<Config>, { jobs }: Stores, agents: Agents): void {
  // Script requests are durable (script_jobs): any replica writes them and its own worker takes
  // them at once, one claim at a time; a request whose replica died is taken over by the timer
  // when its claim lapses.
  const scripts = new Worker({
    service: 'agents',
    job: 'script-jobs',
    everyMs: cfg.SCRIPT_WORKER_INTERVAL_MS,
    log,
    pass: async () => ((await agents.runScriptJobs()) ? 'more' : 'done'),
  });
  jobs.onRequested(() => scripts.wake());
  scripts.start();
  lifecycle.onStop('script worker', () => scripts.stop());
}

export function startConsumers(
  { log, lifecycle }: OpenedService<Config>,
  { kafka, publisher }: StartedEvents,
  agents: Agents,
): void {
  // No inbox: a redelivery drops a document no agent links any more, or asks for a script again.
  const inputs = followScriptInputs(
    new EventSubscriber(kafka, { group: consumerGroup('agents', 'script-inputs'), log, publisher }),
    agents,
  );
  lifecycle.onStop('script-input consumer', () => inputs.stop());
  inputs.start();
}
