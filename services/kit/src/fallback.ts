import { metrics, type Counter } from '@opentelemetry/api';
import { domainErrorOf } from './errors';

/**
 * Fallbacks counted: `voiceapi.fallbacks`, by the dependency that failed, the operation asked of it
 * and the reason (a domain reason code, else the error's name). The service is the resource's
 * `service.name`. A fallback keeps a caller going without a dependency, and so hides a break too
 * (a peer one release older that lacks an RPC answers `unimplemented`, and the caller goes on): the
 * count is what makes it seen (the mixed-version test fails on one its phase did not expect).
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

/** What a fallback names: the dependency (a service, a store) and the operation asked of it. */
export interface FallbackSite {
  dependency: string;
  operation: string;
}

/** The reason a fallback is counted under: the domain reason code when there is one. */
export const fallbackReason = (err: unknown): string =>
  domainErrorOf(err)?.reasonCode ?? (err instanceof Error ? err.name : typeof err);

/** Counts one fallback at `site` because of `err`. */
export function countFallback(site: FallbackSite, err: unknown): void {
  fallbacks().add(1, { dependency: site.dependency, operation: site.operation, reason: fallbackReason(err) });
}

/**
 * `attempt`'s answer, or `fallback`'s when it fails (fail-open), each fallback counted at `site`.
 * For a caller whose work must go on without the dependency; a caller that can wait or fail must not
 * use it.
 */
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
