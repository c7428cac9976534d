import { metrics, type Counter } from '@opentelemetry/api';
import { domainErrorOf } from './errors';

/**
 * `voiceapi.fallbacks`, by dependency, operation and reason (a domain reason code, else the error's name).
 * A fallback hides a break too (a peer one release older answers `unimplemented` and the caller goes on):
 * the count makes it seen; the mixed-version test fails on one it did not expect.
 */
const fallbacks = () =>
  (counter ??= metrics
    .getMeter('voiceapi.fallback')
    .createCounter<{ dependency: string; operation: string; reason: string }>('voiceapi.fallbacks', {
      description:
        'Answers a caller made up because a dependency failed (fail-open), by dependency, operation and reason',
    }));
// Made at the first fallback, so it is the telemetry SDK's wherever this module was first loaded.
let counter: Counter<{ dependency: string; operation: string; reason: string }> | undefined;

export interface FallbackSite {
  dependency: string;
  operation: string;
}

export const fallbackReason = (err: unknown): string =>
  domainErrorOf(err)?.reasonCode ?? (err instanceof Error ? err.name : typeof err);

export function countFallback(site: FallbackSite, err: unknown): void {
  fallbacks().add(1, { dependency: site.dependency, operation: site.operation, reason: fallbackReason(err) });
}

/** Fail-open, counted: only for work that must go on without the dependency, not a caller that can wait or fail. */
export async function orFallback<T>(
  site: FallbackSite,
  attempt: () => Promise<T>,
  fallback: (err: unknown) => T,
): Promise<T> {
  try {
    return await attempt();
  } catch (err) {
    countFallback(site, err);
    return fallback(err);
  }
}
