/** Business and service metrics, and deadline counters. */
export * from '../telemetry/metrics';
export * from '../telemetry/deadlines';
