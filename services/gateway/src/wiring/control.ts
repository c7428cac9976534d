import {
  broadcastGroup,
  broadcastGroupPrefix,
  EventSubscriber,
  removeIdleBroadcastGroups,
  type StartedEvents,
  type Outbox,
} from '@voiceapi/kit/events';
import type { OpenedService } from '@voiceapi/kit/service';
import { authenticatedKey, KeyCache } from '../auth/key-cache';
import type { Config } from '../config';
import { ControlPlane } from '../control/control-plane';
import type { Stores } from './stores';

/** The key cache and the control plane (kill switch, key changes) every replica follows, started; stopped on stop. */
export async function startControl(
  { cfg, log, lifecycle }: OpenedService<Config>,
  { apiKeys, settings }: Stores,
  { kafka, publisher, outbox }: StartedEvents & { outbox: Outbox },
) {
  const keys = new KeyCache(
    async (hash) => {
      const record = await apiKeys.findByHash(hash);
      return record && authenticatedKey(record);
    },
    { ttlMs: cfg.KEY_CACHE_TTL_MS },
  );
  const control = new ControlPlane(
    settings,
    keys,
    outbox,
    publisher,
    // Every replica hears every control event: a broadcast group of its own, from now on (it reads
    // the state at start), removed on stop.
    new EventSubscriber(kafka, {
      group: broadcastGroup('gateway', 'control', cfg.INSTANCE_ID),
      log,
      publisher,
      removeGroupOnStop: true,
      fromBeginning: false,
    }),
    log,
    cfg.CONTROL_RESYNC_MS,
  );
  await control.start();
  lifecycle.onStop('control plane', () => control.stop());
  // Groups of replicas that died without removing their own.
  void removeIdleBroadcastGroups(kafka, broadcastGroupPrefix('gateway', 'control'), log).catch((err: unknown) =>
    log.warn({ err }, 'could not look for idle broadcast groups'),
  );
  return { keys, control };
}
