import type { Connection } from 'mongoose';
import type { ServiceRegistration, RunningGrpcServer } from './grpc/server';
import { startGrpcServer } from './grpc/server';
import { Lifecycle } from './lifecycle';
import { createLogger, type Logger } from './logger';
import { connectMongo } from './mongo/connect';
import { shutdownTelemetry } from './telemetry/running';

/** The settings the starter reads: `commonEnv` and the process's own database. */
export interface ServiceSettings {
  LOG_LEVEL: string;
  MONGO_URL: string;
  MONGO_DB: string;
  SHUTDOWN_GRACE_MS: number;
  STORE_OPS_COUNTING: boolean;
  /** Optional for settings objects made by hand (tests); `commonEnv` always gives it. */
  STORE_SLOW_COMMAND_MS?: number;
}

/** ...and, for a gRPC service, its address and `grpcServerEnv`. */
export interface GrpcSettings extends ServiceSettings {
  GRPC_HOST: string;
  GRPC_PORT: number;
  GRPC_MAX_CONNECTION_AGE_MS: number;
  GRPC_MAX_CONNECTION_AGE_GRACE_MS: number;
}

/** What every process has once opened: its logger, its ordered shutdown and its own database. */
export interface OpenedService<C extends ServiceSettings> {
  cfg: C;
  log: Logger;
  lifecycle: Lifecycle;
  conn: Connection;
}

/**
 * Shared start-up: logger, lifecycle, database. Hooks run in reverse, so a process that ends its wiring
 * with `serveGrpc` stops taking work first and flushes telemetry last.
 */
export async function openService<C extends ServiceSettings>(
  name: string,
  cfg: C,
  opts: { redact?: string[] } = {},
): Promise<OpenedService<C>> {
  const log = createLogger(name, cfg.LOG_LEVEL, opts.redact ? { redact: opts.redact } : {});
  const lifecycle = new Lifecycle(log, cfg.SHUTDOWN_GRACE_MS);
  lifecycle.onStop('telemetry', shutdownTelemetry);
  const conn = await connectMongo({
    url: cfg.MONGO_URL,
    dbName: cfg.MONGO_DB,
    log,
    countOps: cfg.STORE_OPS_COUNTING,
    ...(cfg.STORE_SLOW_COMMAND_MS !== undefined && { slowCommandMs: cfg.STORE_SLOW_COMMAND_MS }),
  });
  lifecycle.onStop('mongo', () => conn.close());
  return { cfg, log, lifecycle, conn };
}

/** The last step of start-up (the port is seen once everything behind it runs) and the first to stop. */
export async function serveGrpc(
  svc: OpenedService<GrpcSettings>,
  services: ServiceRegistration[],
): Promise<RunningGrpcServer> {
  const { cfg, log, lifecycle } = svc;
  const server = await startGrpcServer({
    host: cfg.GRPC_HOST,
    port: cfg.GRPC_PORT,
    services,
    log,
    maxConnectionAgeMs: cfg.GRPC_MAX_CONNECTION_AGE_MS,
    maxConnectionAgeGraceMs: cfg.GRPC_MAX_CONNECTION_AGE_GRACE_MS,
  });
  // Forced a little before the step's budget ends, so the step ends by its own hand.
  lifecycle.onStop('grpc', (budgetMs) => server.drain(Math.max(budgetMs - 250, 0)));
  return server;
}

/** Runs `start` when `mod` is the main module (tests run it in-process); a failed start exits with one line. */
export function runAsMain(mod: NodeModule, name: string, start: () => Promise<{ lifecycle: Lifecycle }>): void {
  if (require.main !== mod) return;
  start().then(
    ({ lifecycle }) => lifecycle.handleSignals(),
    (err: unknown) => {
      console.error(`${name} failed to start: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
