import { startEvents } from '@voiceapi/kit/events';
import { openService, runAsMain } from '@voiceapi/kit/service';
import { voiceapi } from '@voiceapi/proto';
import { ConnectionStates } from 'mongoose';
import { buildApp } from './app';
import { LastUsedRecorder } from './auth/last-used';
import { closeServiceClients, createServiceClients } from './clients';
import { readConfig } from './config';
import { OperatorUseCases } from './operator/operator';
import { CallStreams } from './routes/telephony/call-stream';
import { startControl } from './wiring/control';
import { serveHttp } from './wiring/http';
import { openStores } from './wiring/stores';
import { startWorkers } from './wiring/workers';

/** Starts one gateway replica; returns its port and lifecycle so tests can run it in-process. */
export async function startGateway(env: Record<string, string | undefined> = process.env) {
  const cfg = readConfig(env);
  // An issued key's plaintext (`key`) and the operator token must never reach a log line.
  const svc = await openService('gateway', cfg, {
    redact: ['key', '*.key', 'adminToken', 'ADMIN_TOKEN', 'KEY_HASH_PEPPER'],
  });
  const { log, lifecycle, conn } = svc;
  const stores = openStores(svc);

  // The gateway owns the control stream, so it creates its topics.
  const events = await startEvents({
    service: 'gateway',
    settings: cfg,
    streams: [voiceapi.events.v1.GatewayControlEvent],
    log,
    lifecycle,
    outboxOn: conn,
  });
  const { keys, control } = await startControl(svc, stores, events);

  const lastUsed = new LastUsedRecorder(
    (keyId, at) => stores.apiKeys.touch(keyId, at),
    cfg.LAST_USED_RESOLUTION_MS,
    (err) => log.warn({ err }, 'could not record lastUsedAt'),
  );
  startWorkers(svc, stores);

  const clients = createServiceClients(cfg);
  lifecycle.onStop('grpc clients', () => closeServiceClients(clients));
  const streams = new CallStreams({
    read: (req, ctx, opts) => clients.telephony.readCallFeed(req, ctx, opts),
    leases: stores.streamLeases,
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
    idempotency: stores.idempotency,
    operator: new OperatorUseCases(stores.tenants, stores.apiKeys, stores.requests, control, cfg.KEY_HASH_PEPPER),
    clients,
    streams,
  });
  const port = await serveHttp(svc, app, streams);
  log.info({ port, host: cfg.HOST }, 'gateway listening');
  return { port, lifecycle, log, control };
}

runAsMain(module, 'gateway', () => startGateway());
