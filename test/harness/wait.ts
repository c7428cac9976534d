import type { ChildProcess } from 'node:child_process';

// The waits of every test and bench: integration tests (services/*/test), e2e, fault, cluster and
// bench code import these; a kit unit spec (libs/kit/src, outside test/tsconfig) uses
// node:timers/promises' setTimeout instead.

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A probe's value once the default `done` holds: anything but undefined, null, false, 0 and ''. */
export type Truthy<T> = Exclude<T, undefined | null | false | 0 | ''>;

export interface EventuallyOptions<T> {
  /** Between two probes; default 100 ms. */
  intervalMs?: number;
  /** Whether a probe's value ends the wait; default: a truthy value. */
  done?: (value: T) => boolean;
  /** A probe that throws counts as not yet (a server it reads may be away); by default its error fails the wait at once. */
  retryErrors?: boolean;
  /** What the timeout's message adds (the state of what was waited for); by default the last value (with `done`, or when it is an object). */
  detail?: (last: T | undefined) => unknown;
  /** The process waited for: its exit fails the wait at once, and its output ends the timeout's message. */
  proc?: { name: string; child: ChildProcess; output(): string };
}

/**
 * Probes until `done` holds of the value (by default, until the value is truthy) and returns that
 * value; fails after `timeoutMs` (default 30 s) with `what`, the last value or error and `detail`.
 */
export function eventually<T>(
  what: string,
  probe: () => T | Promise<T>,
  timeoutMs?: number,
  opts?: EventuallyOptions<T> & { done?: undefined },
): Promise<Truthy<T>>;
export function eventually<T>(
  what: string,
  probe: () => T | Promise<T>,
  timeoutMs: number | undefined,
  opts: EventuallyOptions<T> & { done: (value: T) => boolean },
): Promise<T>;
export async function eventually<T>(
  what: string,
  probe: () => T | Promise<T>,
  timeoutMs = 30_000,
  opts: EventuallyOptions<T> = {},
): Promise<T> {
  const { intervalMs = 100, done = (v: T) => Boolean(v), retryErrors = false, proc } = opts;
  const until = Date.now() + timeoutMs;
  for (;;) {
    if (proc && (proc.child.exitCode !== null || proc.child.signalCode !== null))
      throw new Error(`${proc.name} exited early:\n${proc.output()}`);
    let last: T | undefined;
    let failed: { error: unknown } | undefined;
    try {
      last = await probe();
      if (done(last)) return last;
    } catch (error) {
      if (!retryErrors) throw error;
      failed = { error };
    }
    if (Date.now() > until)
      throw new Error(await timedOut(what, timeoutMs, last, failed, opts), failed && { cause: failed.error });
    await sleep(intervalMs);
  }
}

async function timedOut<T>(
  what: string,
  timeoutMs: number,
  last: T | undefined,
  failed: { error: unknown } | undefined,
  opts: EventuallyOptions<T>,
): Promise<string> {
  const text = (v: unknown) => (typeof v === 'string' ? v : JSON.stringify(v));
  let message = `${what}: not within ${timeoutMs} ms`;
  if (failed) message += `; last error: ${failed.error instanceof Error ? failed.error.message : String(failed.error)}`;
  else if (!opts.detail && last !== undefined && (opts.done || (typeof last === 'object' && last !== null)))
    message += `; last: ${text(last).slice(0, 500)}`;
  if (opts.detail) {
    const detail = await Promise.resolve()
      .then(() => opts.detail!(last))
      .catch((e: unknown) => String(e));
    message += `; ${text(detail)}`;
  }
  if (opts.proc) message += `:\n${opts.proc.output()}`;
  return message;
}
