import type { Server } from 'node:http';
import {
  broadcastGroup,
  broadcastGroupPrefix,
  EventSubscriber,
  removeIdleBroadcastGroups,
  startEvents,
} from '@voiceapi/kit/events';
import { openService, runAsMain } from '@voiceapi/kit/service';
import { Worker } from '@voiceapi/kit/work';
import { voiceapi } from '@voiceapi/proto';
import { ConnectionStates } from 'mongoose';
import { buildApp, createHttpServer } from './app';
import { closeHttp } from './http/drain';
import { authenticatedKey, KeyCache } from './auth/key-cache';
import { LastUsedRecorder } from './auth/last-used';
import { closeServiceClients, createServiceClients } from './clients';
import { readConfig } from './config';
import { ControlPlane } from './control/control-plane';
import { OperatorUseCases } from './operator/operator';
import { ApiKeyStore } from './store/api-keys';
import { IdempotencyStore } from './store/idempotency';
import { StreamLeaseStore } from './store/stream-leases';
import { CallStreams } from './routes/telephony/call-stream';
import { KeyRequestStore } from './store/key-requests';
import { SettingsStore } from './store/settings';
import { TenantStore } from './store/tenants';

/** Starts one gateway replica; returns its port and lifecycle so tests can run it in-process. */
export async function startGateway(env: Record<string, string | undefined> = process.env) {
  const cfg = readConfig(env);
  // An issued key's plaintext (`key`) and the operator token must never reach a log line.
  const { log, lifecycle, conn } = await openService('gateway', cfg, {
    redact: ['key', '*.key', 'adminToken', 'ADMIN_TOKEN', 'KEY_HASH_PEPPER'],
  });
  const tenants = new TenantStore(conn);
  const apiKeys = new ApiKeyStore(conn);
  const requests = new KeyRequestStore(conn);
  const settings = new SettingsStore(conn);
  const idempotency = new IdempotencyStore(conn);
  const streamLeases = new StreamLeaseStore(conn);

  // The gateway owns the control stream, so it creates its topics.
  const { GatewayControlEvent } = voiceapi.events.v1;
  const { kafka, publisher, outbox } = await startEvents({
    service: 'gateway',
    settings: cfg,
    streams: [GatewayControlEvent],
    log,
    lifecycle,
    outboxOn: conn,
  });

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

  const lastUsed = new LastUsedRecorder(
    (keyId, at) => apiKeys.touch(keyId, at),
    cfg.LAST_USED_RESOLUTION_MS,
    (err) => log.warn({ err }, 'could not record lastUsedAt'),
  );
  // Every replica sweeps (a sweep is one bounded delete; two at once cost nothing more).
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

  const clients = createServiceClients(cfg);
  lifecycle.onStop('grpc clients', () => closeServiceClients(clients));
  const streams = new CallStreams({
    read: (req, ctx, opts) => clients.telephony.readCallFeed(req, ctx, opts),
    leases: streamLeases,
    log,
    settings: { keepAliveMs: cfg.CALL_STREAM_KEEPALIVE_MS, stallMs: cfg.CALL_STREAM_STALL_MS },
  });

  const app = buildApp({
    cfg,
    log,
    killSwitch: () => control.killSwitch,
    ready: () => control.ready && conn.readyState === ConnectionStates.connected,
    keys,
    onKeyUsed: (auth) => lastUsed.used(auth.keyId),
    idempotency,
    operator: new OperatorUseCases(tenants, apiKeys, requests, control, cfg.KEY_HASH_PEPPER),
    clients,
    streams,
  });
  const server: Server = await new Promise((resolve, reject) => {
    const s = createHttpServer(app, { maxHeaderBytes: cfg.MAX_HEADER_BYTES, log }).listen(cfg.PORT, cfg.HOST, () =>
      resolve(s),
    );
    s.once('error', reject);
  });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  // Stop accepting first; requests in flight finish, idle keep-alive sockets close.
  lifecycle.onStop('http', () => closeHttp(server));
  // First of all (hooks run last-registered first): the open call streams end, so their clients
  // reconnect to another replica with their Last-Event-ID while this one drains.
  lifecycle.onStop('call streams', () => streams.closeAll());
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : cfg.PORT;
  log.info({ port, host: cfg.HOST }, 'gateway listening');
  return { port, lifecycle, log, control };
}

runAsMain(module, 'gateway', () => startGateway());
