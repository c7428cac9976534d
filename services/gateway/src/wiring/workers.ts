import type { OpenedService } from '@voiceapi/kit/service';
import { Worker } from '@voiceapi/kit/work';
import type { Config } from '../config';
import type { Stores } from './stores';

/** The gateway's one background job, on every replica (a sweep is one bounded delete; two at once cost nothing more). */
export function startWorkers({ log, lifecycle }: OpenedService<Config>, { idempotency, streamLeases }: Stores) {
  const sweep = new Worker({
    service: 'gateway',
    job: 'idempotency-sweep',
    everyMs: 10 * 60_000,
    log,
    pass: async () => {
      await idempotency.sweep();
      // Leases of streams whose replica died: expired, no longer counted, deleted here.
      await streamLeases.sweep();
    },
  });
  sweep.start();
  lifecycle.onStop('idempotency sweep', () => sweep.stop());
}
