import { connectMongo, createLogger, Lifecycle, shutdownTelemetry, startEvents, startGrpcServer } from '@voiceapi/kit';
import { voiceapi } from '@voiceapi/proto';
import { readConfig } from './config';
import { companyEvents } from './events/publish';
import { companiesService } from './grpc/companies-server';
import { CompanyStore } from './store/company-store';
import { Companies } from './usecases/companies';

/** Starts the companies service; returns its lifecycle so tests can stop it in-process. */
export async function startCompanies(env: Record<string, string | undefined> = process.env) {
  const cfg = readConfig(env);
  // Email-server and WhatsApp credentials stored on a company never reach a log line.
  const log = createLogger('companies', cfg.LOG_LEVEL, { redact: ['omniChannelSettings', '*.omniChannelSettings'] });
  const lifecycle = new Lifecycle(log, cfg.SHUTDOWN_GRACE_MS);
  lifecycle.onStop('telemetry', shutdownTelemetry);

  const conn = await connectMongo({ url: cfg.MONGO_URL, dbName: cfg.MONGO_DB, log, countOps: cfg.STORE_OPS_COUNTING });
  lifecycle.onStop('mongo', () => conn.close());

  const store = new CompanyStore(conn);

  // Companies owns the `companies.v1` stream (a changed profile is announced there for agents).
  const { outbox } = await startEvents({ service: 'companies', settings: cfg, streams: [voiceapi.events.v1.CompaniesEvent], log, lifecycle, outboxOn: conn });
  const useCases = new Companies(store, companyEvents(outbox));
  const server = await startGrpcServer({
    host: cfg.GRPC_HOST,
    port: cfg.GRPC_PORT,
    services: [companiesService(useCases, log)],
    log,
    maxConnectionAgeMs: cfg.GRPC_MAX_CONNECTION_AGE_MS,
    maxConnectionAgeGraceMs: cfg.GRPC_MAX_CONNECTION_AGE_GRACE_MS,
  });
  lifecycle.onStop('grpc', () => server.drain(cfg.SHUTDOWN_GRACE_MS));
  return { port: server.port, lifecycle, log };
}

if (require.main === module) {
  startCompanies().then(
    ({ lifecycle }) => lifecycle.handleSignals(),
    (err: unknown) => {
      // Config and connection failures end the process with one clear line, not a trace.
      console.error(`companies failed to start: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
