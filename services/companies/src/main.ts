import { startEvents } from '@voiceapi/kit/events';
import { openService, runAsMain, serveGrpc } from '@voiceapi/kit/service';
import { voiceapi } from '@voiceapi/proto';
import { readConfig } from './config';
import { companiesService } from './grpc/companies-server';
import { openStores } from './wiring/stores';
import { buildUseCases } from './wiring/usecases';

/** Starts the companies service; returns its lifecycle so tests can stop it in-process. */
export async function startCompanies(env: Record<string, string | undefined> = process.env) {
  const cfg = readConfig(env);
  // Email-server and WhatsApp credentials stored on a company never reach a log line.
  const svc = await openService('companies', cfg, { redact: ['omniChannelSettings', '*.omniChannelSettings'] });
  const { log, lifecycle, conn } = svc;
  const stores = openStores(svc);

  // Companies owns the `companies.v1` stream (a changed profile is announced there for agents).
  const { outbox } = await startEvents({
    service: 'companies',
    settings: cfg,
    streams: [voiceapi.events.v1.CompaniesEvent],
    log,
    lifecycle,
    outboxOn: conn,
  });
  const useCases = buildUseCases(stores, outbox);
  const server = await serveGrpc(svc, [companiesService(useCases, log)]);
  return { port: server.port, lifecycle, log };
}

runAsMain(module, 'companies', () => startCompanies());
