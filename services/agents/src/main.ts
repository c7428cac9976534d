import { startEvents } from '@voiceapi/kit/events';
import { openService, runAsMain, serveGrpc } from '@voiceapi/kit/service';
import { voiceapi } from '@voiceapi/proto';
import { readConfig } from './config';
import { agentsService } from './grpc/agents-server';
import { connectClients } from './wiring/clients';
import { openStores } from './wiring/stores';
import { buildUseCases } from './wiring/usecases';
import { startConsumers, startWorkers } from './wiring/workers';

/** Starts the agents service; returns its lifecycle so tests can stop it in-process. */
export async function startAgents(env: Record<string, string | undefined> = process.env) {
  const cfg = readConfig(env);
  // The tenant's custom-API secret (and the header it travels in) never reaches a log line.
  const secretPaths = [
    'customApiSecret',
    '*.customApiSecret',
    'authorization',
    '*.authorization',
    'headers.authorization',
    '*.headers.authorization',
  ];
  const svc = await openService('agents', cfg, { redact: secretPaths });
  const { log, lifecycle, conn } = svc;
  const stores = openStores(svc);

  // Agents owns the `agents.v1` stream (a ready script is announced there for webhooks); it reads
  // `knowledge.v1` and `companies.v1` (script inputs), created here too so any can start first.
  const { AgentsEvent, KnowledgeEvent, CompaniesEvent } = voiceapi.events.v1;
  const events = await startEvents({
    service: 'agents',
    settings: cfg,
    streams: [AgentsEvent, KnowledgeEvent, CompaniesEvent],
    log,
    lifecycle,
    outboxOn: conn,
  });

  const clients = connectClients(svc);
  const { agents: useCases, answering, secrets } = buildUseCases(svc, stores, clients, events.outbox);
  startWorkers(svc, stores, useCases);

  const server = await serveGrpc(svc, [agentsService(useCases, answering, log)]);
  startConsumers(svc, events, useCases);
  if (secrets.rotating) {
    // Moves every stored secret onto the current key; once it logs none unreadable, the earlier keys can go.
    void useCases
      .resealSecrets()
      .then((r) => log.info(r, 'custom-API secrets sealed again with the current AGENT_SECRETS_KEY'))
      .catch((err: unknown) => log.warn({ err }, 'the re-seal pass failed; it runs again at the next start'));
  }
  log.info(
    {
      port: server.port,
      scriptGenerator: cfg.SCRIPT_GENERATOR,
      allowListed: cfg.OUTBOUND_ALLOWLIST.length,
      proxied: cfg.OUTBOUND_PROXY !== '',
    },
    'agents listening',
  );
  return { port: server.port, lifecycle, log, useCases };
}

runAsMain(module, 'agents', () => startAgents());
