import {
  createPromiseClient,
  openObjectStore,
  openService,
  runAsMain,
  serveGrpc,
  startEvents,
  Worker,
} from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import { billingWallet } from './clients/billing';
import { readConfig } from './config';
import { knowledgeService } from './grpc/knowledge-server';
import { DocumentStore } from './store/document-store';
import { documentEvents } from './events/publish';
import { Documents } from './usecases/documents';

/** Starts the knowledge service; returns its lifecycle so tests can stop it in-process. */
export async function startKnowledge(env: Record<string, string | undefined> = process.env) {
  const cfg = readConfig(env);
  const svc = await openService('knowledge', cfg);
  const { log, lifecycle, conn } = svc;
  const store = new DocumentStore(conn, await openObjectStore(cfg, lifecycle));

  // Knowledge owns the `knowledge.v1` stream (a deleted document is announced there for agents).
  const { outbox } = await startEvents({
    service: 'knowledge',
    settings: cfg,
    streams: [voiceapi.events.v1.KnowledgeEvent],
    log,
    lifecycle,
    outboxOn: conn,
  });

  const billing = createPromiseClient(voiceapi.billing.v1.BillingServiceService, cfg.BILLING_GRPC_ADDR, {
    timeoutMs: cfg.GRPC_DEADLINE_MS,
    contract: voiceapi.billing.v1.BillingServiceDefinition,
  });
  lifecycle.onStop('billing client', () => billing.close());
  const wallet = billingWallet(billing);
  const useCases = new Documents({
    store,
    wallet,
    events: documentEvents(outbox),
    maxFileBytes: cfg.KNOWLEDGE_MAX_FILE_BYTES,
    log,
  });

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

  const server = await serveGrpc(svc, [knowledgeService(useCases, log)]);
  log.info({ port: server.port, maxFileBytes: cfg.KNOWLEDGE_MAX_FILE_BYTES }, 'knowledge listening');
  return { port: server.port, lifecycle, log, useCases };
}

runAsMain(module, 'knowledge', () => startKnowledge());
