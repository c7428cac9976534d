import { startEvents } from '@voiceapi/kit/events';
import { openService, runAsMain, serveGrpc } from '@voiceapi/kit/service';
import { voiceapi } from '@voiceapi/proto';
import { readConfig } from './config';
import { knowledgeService } from './grpc/knowledge-server';
import { connectClients } from './wiring/clients';
import { openStores } from './wiring/stores';
import { buildUseCases } from './wiring/usecases';
import { startWorkers } from './wiring/workers';

/** Starts the knowledge service; returns its lifecycle so tests can stop it in-process. */
export async function startKnowledge(env: Record<string, string | undefined> = process.env) {
  const cfg = readConfig(env);
  const svc = await openService('knowledge', cfg);
  const { log, lifecycle, conn } = svc;
  const stores = await openStores(svc);

  // Knowledge owns the `knowledge.v1` stream (a deleted document is announced there for agents).
  const { outbox } = await startEvents({
    service: 'knowledge',
    settings: cfg,
    streams: [voiceapi.events.v1.KnowledgeEvent],
    log,
    lifecycle,
    outboxOn: conn,
  });

  const clients = connectClients(svc);
  const useCases = buildUseCases(svc, stores, clients, outbox);
  startWorkers(svc, useCases);

  const server = await serveGrpc(svc, [knowledgeService(useCases, log)]);
  log.info({ port: server.port, maxFileBytes: cfg.KNOWLEDGE_MAX_FILE_BYTES }, 'knowledge listening');
  return { port: server.port, lifecycle, log, useCases };
}

runAsMain(module, 'knowledge', () => startKnowledge());
