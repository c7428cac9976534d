import type { Logger } from './logger';

type Hook = { name: string; run: () => Promise<void> | void };

/**
 * Ordered shutdown. Hooks run in reverse order of registration (stop taking work first, close
 * connections last) when SIGTERM or SIGINT arrives, each bounded by the grace period.
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

  /** Installs the signal handlers; the process exits after the hooks ran. */
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
    for (const hook of [...this.hooks].reverse()) {
      const started = Date.now();
      try {
        await withTimeout(Promise.resolve(hook.run()), this.graceMs, hook.name);
        this.log.debug({ hook: hook.name, ms: Date.now() - started }, 'stopped');
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
