/** Starting and stopping a process: openService, serveGrpc, runAsMain, the lifecycle, the logger. */
export * from '../service';
export * from '../lifecycle';
export * from '../logger';
export { shutdownTelemetry } from '../telemetry/running';
