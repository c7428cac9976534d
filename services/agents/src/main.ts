import {
  consumerGroup,
  createPromiseClient,
  EventSubscriber,
  openService,
  OutboundClient,
  runAsMain,
  SecretBox,
  serveGrpc,
  startEvents,
  Worker,
} from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import { companyProfiles } from './clients/companies';
import { knowledgeDocuments } from './clients/knowledge';
import { ownedNumbers } from './clients/telephony';
import { readConfig } from './config';
import { CustomApi } from './custom-api/custom-api';
import { agentEvents } from './events/publish';
import { followScriptInputs } from './events/consume';
import { agentsService } from './grpc/agents-server';
import { scriptGenerator } from './script/generator';
import { AgentStore } from './store/agent-store';
import { ScriptJobStore } from './store/script-job-store';
import { Agents } from './usecases/agents';
import { Answering } from './usecases/answering';

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
  const agents = new AgentStore(conn, { cacheTtlMs: cfg.AGENT_CACHE_TTL_MS, log });
  agents.cache.start();
  lifecycle.onStop('agent cache', () => agents.cache.stop());
  const jobs = new ScriptJobStore(conn);

  // Agents owns the `agents.v1` stream (a ready script is announced there for webhooks); it reads
  // `knowledge.v1` and `companies.v1` (script inputs), created here too so any can start first.
  const { AgentsEvent, KnowledgeEvent, CompaniesEvent } = voiceapi.events.v1;
  const { kafka, publisher, outbox } = await startEvents({
    service: 'agents',
    settings: cfg,
    streams: [AgentsEvent, KnowledgeEvent, CompaniesEvent],
    log,
    lifecycle,
    outboxOn: conn,
  });

  const grpc = { timeoutMs: cfg.GRPC_DEADLINE_MS };
  const telephony = createPromiseClient(voiceapi.telephony.v1.TelephonyServiceService, cfg.TELEPHONY_GRPC_ADDR, {
    ...grpc,
    contract: voiceapi.telephony.v1.TelephonyServiceDefinition,
  });
  const companiesClient = createPromiseClient(voiceapi.companies.v1.CompaniesServiceService, cfg.COMPANIES_GRPC_ADDR, {
    ...grpc,
    contract: voiceapi.companies.v1.CompaniesServiceDefinition,
  });
  const knowledgeClient = createPromiseClient(voiceapi.knowledge.v1.KnowledgeServiceService, cfg.KNOWLEDGE_GRPC_ADDR, {
    ...grpc,
    contract: voiceapi.knowledge.v1.KnowledgeServiceDefinition,
  });
  lifecycle.onStop('clients', () => [telephony, companiesClient, knowledgeClient].forEach((c) => c.close()));

  const numbers = ownedNumbers(telephony);
  const companies = companyProfiles(companiesClient);
  const knowledge = knowledgeDocuments(knowledgeClient);

  const outbound = new OutboundClient({ allow: cfg.OUTBOUND_ALLOWLIST, proxy: cfg.OUTBOUND_PROXY });
  lifecycle.onStop('outbound client', () => outbound.close());
  const customApi = new CustomApi(outbound);
  // A key ring: the current key seals, earlier ones (while a rotation is under way) still open.
  const secrets = new SecretBox(
    [cfg.AGENT_SECRETS_KEY, ...cfg.AGENT_SECRETS_PREVIOUS_KEYS],
    'agents.custom-api-secret',
  );
  const useCases = new Agents({
    agents,
    jobs,
    numbers,
    companies,
    knowledge,
    events: agentEvents(outbox),
    customApi,
    secrets,
    generator: scriptGenerator(cfg.SCRIPT_GENERATOR),
    maxKnowledge: cfg.MAX_SELECTED_KNOWLEDGEBASES,
    claimMs: cfg.SCRIPT_CLAIM_MS,
    log,
  });

  // Script requests are durable (script_jobs): any replica writes them and its own worker takes
  // them at once, one claim at a time; a request whose replica died is taken over by the timer
  // when its claim lapses.
  const scripts = new Worker({
    service: 'agents',
    job: 'script-jobs',
    everyMs: cfg.SCRIPT_WORKER_INTERVAL_MS,
    log,
    pass: async () => ((await useCases.runScriptJobs()) ? 'more' : 'done'),
  });
  jobs.onRequested(() => scripts.wake());
  scripts.start();
  lifecycle.onStop('script worker', () => scripts.stop());

  const server = await serveGrpc(svc, [
    agentsService(useCases, new Answering({ agents, companies, customApi, secrets }), log),
  ]);
  // No inbox: a redelivery drops a document no agent links any more, or asks for a script again.
  const inputs = followScriptInputs(
    new EventSubscriber(kafka, { group: consumerGroup('agents', 'script-inputs'), log, publisher }),
    useCases,
  );
  lifecycle.onStop('script-input consumer', () => inputs.stop());
  inputs.start();
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
