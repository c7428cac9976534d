import { connectMongo, createLogger, createPromiseClient, Lifecycle, shutdownTelemetry, startEvents, startGrpcServer, Worker } from '@voiceapi/kit';
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
  const log = createLogger('knowledge', cfg.LOG_LEVEL);
  const lifecycle = new Lifecycle(log, cfg.SHUTDOWN_GRACE_MS);
  lifecycle.onStop('telemetry', shutdownTelemetry);

  const conn = await connectMongo({ url: cfg.MONGO_URL, dbName: cfg.MONGO_DB, log, countOps: cfg.STORE_OPS_COUNTING });
  lifecycle.onStop('mongo', () => conn.close());
  const store = new DocumentStore(conn);

  // Knowledge owns the `knowledge.v1` stream (a deleted document is announced there for agents).
  const { outbox } = await startEvents({ service: 'knowledge', settings: cfg, streams: [voiceapi.events.v1.KnowledgeEvent], log, lifecycle, outboxOn: conn });

  const billing = createPromiseClient(voiceapi.billing.v1.BillingServiceService, cfg.BILLING_GRPC_ADDR, { timeoutMs: cfg.GRPC_DEADLINE_MS });
  lifecycle.onStop('billing client', () => billing.close());
  const wallet = billingWallet(billing);
  const useCases = new Documents({ store, wallet, events: documentEvents(outbox), maxFileBytes: cfg.KNOWLEDGE_MAX_FILE_BYTES, log });

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

  const server = await startGrpcServer({
    host: cfg.GRPC_HOST,
    port: cfg.GRPC_PORT,
    services: [knowledgeService(useCases, log)],
    log,
    maxConnectionAgeMs: cfg.GRPC_MAX_CONNECTION_AGE_MS,
    maxConnectionAgeGraceMs: cfg.GRPC_MAX_CONNECTION_AGE_GRACE_MS,
  });
  lifecycle.onStop('grpc', () => server.drain(cfg.SHUTDOWN_GRACE_MS));
  log.info({ port: server.port, maxFileBytes: cfg.KNOWLEDGE_MAX_FILE_BYTES }, 'knowledge listening');
  return { port: server.port, lifecycle, log, useCases };
}

if (require.main === module) {
  startKnowledge().then(
    ({ lifecycle }) => lifecycle.handleSignals(),
    (err: unknown) => {
      // Config and connection failures end the process with one clear line, not a trace.
      console.error(`knowledge failed to start: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
