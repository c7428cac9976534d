import type { OpenedService } from '@voiceapi/kit/service';
import { Worker } from '@voiceapi/kit/work';
import type { Config } from '../config';
import type { Documents } from '../usecases/documents';

export function startWorkers({ cfg, log, lifecycle }: OpenedService<Config>, useCases: Documents): void {
  // Uploads a crashed replica left between storing and charging: finished (charged once, by
  // reference) or undone. Any replica may do it; every step is idempotent.
  const recovery = new Worker({
    service: 'knowledge',
    job: 'upload-recovery',
    everyMs: cfg.RECOVERY_INTERVAL_MS,
    log,
    pass: async () => void (await useCases.recover(new Date(Date.now() - cfg.PENDING_UPLOAD_GRACE_MS))),
  });
  recovery.start();
  lifecycle.onStop('recovery', () => recovery.stop());
}
