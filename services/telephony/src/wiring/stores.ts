import { ChangeFeed } from '@voiceapi/kit/mongo';
import { openObjectStore } from '@voiceapi/kit/objects';
import type { OpenedService } from '@voiceapi/kit/service';
import type { Config } from '../config';
import { CallFeedStore } from '../store/call-feed-store';
import { CallStore } from '../store/call-store';
import { DialQueueStore } from '../store/dial-queue-store';
import { FeedFollowerStore } from '../store/feed-follower-store';
import { LineStore } from '../store/line-store';
import { NumberStore } from '../store/number-store';
import { RecordingStore } from '../store/recording-store';
import { RollupStore } from '../store/rollup-store';
import { TenantSettingsStore } from '../store/tenant-settings-store';
import { FeedWaiters } from '../usecases/call-feed';

export type Stores = Awaited<ReturnType<typeof openStores>>;

/** Telephony's stores with their caches running, and the call feed's readers, woken by its change stream. */
export async function openStores({ cfg, conn, log, lifecycle }: OpenedService<Config>) {
  const calls = new CallStore(conn);
  const recordings = new RecordingStore(conn, await openObjectStore(cfg, lifecycle));
  const numbers = new NumberStore(conn, { cacheTtlMs: cfg.NUMBER_CACHE_TTL_MS, log });
  numbers.cache.start();
  lifecycle.onStop('number cache', () => numbers.cache.stop());
  const lines = new LineStore(conn);
  // The dial queue older releases write, taken over by a worker (decision 0147).
  const leftovers = new DialQueueStore(conn);
  const settings = new TenantSettingsStore(conn, cfg.DEFAULT_MAX_CONCURRENT_CALLS, log);
  settings.cache.start();
  lifecycle.onStop('package cache', () => settings.cache.stop());
  const rollups = new RollupStore(conn);
  const feedStore = new CallFeedStore(conn);
  const followerStore = new FeedFollowerStore(conn);
  // Feed readers wait for their tenant's next change, written by whichever replica owns the tenant's partition.
  const waiters = new FeedWaiters();
  const feedChanges = new ChangeFeed([feedStore.changes((tenantId) => waiters.wake(tenantId))], () => undefined, log);
  feedChanges.start();
  lifecycle.onStop('call feed changes', () => feedChanges.stop());
  return { calls, recordings, numbers, lines, leftovers, settings, rollups, feedStore, followerStore, waiters };
}
