import { type Lease } from '@voiceapi/kit/mongo';
import { type Logger } from '@voiceapi/kit/service';
import { Worker } from '@voiceapi/kit/work';
import type { Config } from '../config';
import type { RollupStore } from '../store/rollup-store';
import type { CallFeed } from '../usecases/call-feed';
import type { CallRunner } from '../usecases/call-runner';
import type { RecordingKeeper } from '../usecases/recording-keeper';
import type { Recovery } from './recovery';
import type { RollupRecompute } from './rollups';

/** Buckets recomputed in one pass; a full one is followed by another at once. */
const ROLLUP_BATCH = 200;
/** Calls settled again per pass at most (those that ended while billing was away). */
const SETTLE_BATCH = 200;
/** Recordings stored again, or removed at their retention's end, per pass at most. */
const RECORDING_BATCH = 50;
/** Old feed changes deleted in one pass; a full one is followed by another at once. */
const FEED_PRUNE_BATCH = 1_000;

export interface BackgroundDeps {
  cfg: Readonly<Config>;
  lease: Lease;
  log: Logger;
  recovery: Recovery;
  runner: CallRunner;
  keeper: RecordingKeeper;
  recompute: RollupRecompute;
  rollups: RollupStore;
  feed: CallFeed;
}

/** Telephony's workers beside the dispatcher, on its lease: what a crash, an outage or time leaves to do. */
export function backgroundWorkers({
  cfg,
  lease,
  log,
  recovery,
  runner,
  keeper,
  recompute,
  rollups,
  feed,
}: BackgroundDeps): Worker[] {
  return [
    new Worker({
      service: 'telephony',
      job: 'call-recovery',
      everyMs: cfg.RECOVERY_INTERVAL_MS,
      lease,
      log,
      pass: async () => void (await recovery.runOnce()),
    }),
    // Calls that ended while billing was away, settled again until it answers (on recovery's cadence).
    new Worker({
      service: 'telephony',
      job: 'call-settlement',
      everyMs: cfg.RECOVERY_INTERVAL_MS,
      lease,
      log,
      pass: async () => ((await runner.settlePending(SETTLE_BATCH)) === SETTLE_BATCH ? 'more' : 'done'),
    }),
    // Recordings object storage could not take as their calls ended, stored again once it answers.
    new Worker({
      service: 'telephony',
      job: 'recording-retry',
      everyMs: cfg.RECOVERY_INTERVAL_MS,
      lease,
      log,
      pass: async () => ((await keeper.storeDue(RECORDING_BATCH)) === RECORDING_BATCH ? 'more' : 'done'),
    }),
    // Retention, when set: recordings removed as it ends (object storage lifecycle rules are not assumed: any S3).
    ...(cfg.RECORDING_RETENTION_DAYS === undefined
      ? []
      : [
          new Worker({
            service: 'telephony',
            job: 'recording-retention',
            everyMs: 10 * 60_000,
            lease,
            log,
            pass: async () => ((await keeper.expire(RECORDING_BATCH)) === RECORDING_BATCH ? 'more' : 'done'),
          }),
        ]),
    new Worker({
      service: 'telephony',
      job: 'rollups',
      everyMs: cfg.ROLLUP_INTERVAL_MS,
      wakeOn: [rollups.changes()],
      gatherMs: 1_000,
      lease,
      log,
      pass: async () => ((await recompute.runOnce(ROLLUP_BATCH)) === ROLLUP_BATCH ? 'more' : 'done'),
    }),
    // The call feed keeps a day (and an hour): a stream resumes from up to a day back.
    new Worker({
      service: 'telephony',
      job: 'call-feed-prune',
      everyMs: 10 * 60_000,
      lease,
      log,
      pass: () => feed.prune(FEED_PRUNE_BATCH),
    }),
  ];
}
