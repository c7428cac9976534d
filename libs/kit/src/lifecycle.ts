import type { Logger } from './logger';

/** A shutdown step; `budgetMs` is the time it has before it is cut short. */
type Hook = { name: string; run: (budgetMs: number) => Promise<void> | void };

/** What a step still gets once the grace period is spent: enough to close a connection. */
const LAST_STEP_MS = 1_000;

/**
 * Shutdown hooks run in reverse order of registration within the grace period; once it is spent each
 * remaining step still gets LAST_STEP_MS. The charts' termination grace is preStop pause + grace + 10 s.
 */
export class Lifecycle {
  private readonly hooks: Hook[] = [];
  private stopping: Promise<void> | undefined;

  constructor(
    private readonly log: Logger,
    private readonly graceMs: number,
  ) {}

  onStop(name: string, run: Hook['run']): void {
    this.hooks.push({ name, run });
  }

  handleSignals(): void {
    const onSignal = (signal: NodeJS.Signals) => {
      this.log.info({ signal }, 'shutting down');
      void this.stop().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  }

  stop(): Promise<void> {
    this.stopping ??= this.runHooks();
    return this.stopping;
  }

  private async runHooks(): Promise<void> {
    const deadline = Date.now() + this.graceMs;
    for (const hook of [...this.hooks].reverse()) {
      const started = Date.now();
      try {
        const budgetMs = Math.max(deadline - started, LAST_STEP_MS);
        await withTimeout(Promise.resolve(hook.run(budgetMs)), budgetMs, hook.name);
        // Said at info: a pod killed at the end of its grace period shows the step it was in.
        this.log.info({ hook: hook.name, ms: Date.now() - started }, 'stopped');
      } catch (err) {
        this.log.error({ err, hook: hook.name }, 'shutdown step failed');
      }
    }
  }
}

export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not finish within ${ms} ms`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
