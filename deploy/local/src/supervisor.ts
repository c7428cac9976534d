/**
 * Keeps one process running, as an orchestrator would: when it exits on its own it is started
 * again after a delay that doubles with each consecutive failure (0.5 s … 30 s) and goes back to
 * the start once the process has stayed up for a while. Every exit and restart is said.
 */

/** What a start returns: the process that now runs. */
export interface Running {
  pid: number;
  /** Resolves once it has exited, with how ("code 1", "signal SIGKILL"). */
  exited: Promise<string>;
  stop(): Promise<void>;
}

export interface Backoff {
  initialMs: number;
  maxMs: number;
  /** Up this long: the next failure waits initialMs again. */
  resetAfterMs: number;
}

export const DEFAULT_BACKOFF: Backoff = { initialMs: 500, maxMs: 30_000, resetAfterMs: 60_000 };

export interface SuperviseOptions {
  name: string;
  /**
   * Starts the process; resolves once it counts as up. `first` is the initial start (callers may
   * wait for readiness there); `signal` aborts when the supervisor is stopped meanwhile.
   */
  start(ctx: { first: boolean; signal: AbortSignal }): Promise<Running>;
  /** One console line per exit, restart delay or failed restart. */
  say(line: string): void;
  backoff?: Partial<Backoff>;
}

export interface Supervisor {
  readonly name: string;
  /** Settles with the first start; rejects when it fails (nothing is retried before that). */
  readonly started: Promise<void>;
  /** The process running now, if any. */
  current(): Running | undefined;
  /** How many restarts were attempted. */
  restarts(): number;
  /** From now on an exit is final (used when a shutdown begins, before the ordered stops). */
  noMoreRestarts(): void;
  /** No more restarts; stops the process, or a start still in progress. Safe to call twice. */
  stop(): Promise<void>;
}

const seconds = (ms: number) => `${ms / 1000} s`;
const firstLine = (err: unknown) => (err instanceof Error ? err.message : String(err)).split('\n')[0];

export function supervise(opts: SuperviseOptions): Supervisor {
  const backoff = { ...DEFAULT_BACKOFF, ...opts.backoff };
  const abort = new AbortController();
  let delay = backoff.initialMs;
  let restarts = 0;
  let stopped = false;
  let running: Running | undefined;
  let timer: NodeJS.Timeout | undefined;
  let starting: Promise<void> = Promise.resolve();
  let stopping: Promise<void> | undefined;

  const launch = async (first: boolean): Promise<void> => {
    const proc = await opts.start({ first, signal: abort.signal });
    if (stopped) return proc.stop();
    running = proc;
    const upSince = Date.now();
    void proc.exited.then((how) => {
      if (running === proc) running = undefined;
      if (stopped) return;
      if (Date.now() - upSince >= backoff.resetAfterMs) delay = backoff.initialMs;
      restartLater(`${opts.name} exited (${how})`);
    });
  };

  const restartLater = (why: string): void => {
    const wait = delay;
    delay = Math.min(delay * 2, backoff.maxMs);
    opts.say(`${why}; restarting in ${seconds(wait)}`);
    timer = setTimeout(() => {
      timer = undefined;
      restarts++;
      starting = launch(false).catch((err: unknown) => {
        if (!stopped) restartLater(`${opts.name} did not come back (${firstLine(err)})`);
      });
    }, wait);
  };

  const noMoreRestarts = (): void => {
    stopped = true;
    clearTimeout(timer);
  };

  const started = launch(true);
  starting = started.catch(() => undefined); // the first start's failure reaches the caller through `started`; stop() only waits on it

  return {
    name: opts.name,
    started,
    current: () => running,
    restarts: () => restarts,
    noMoreRestarts,
    stop: () =>
      (stopping ??= (async () => {
        noMoreRestarts();
        abort.abort();
        await starting;
        if (!running) return;
        await running.stop();
        opts.say(`${opts.name} stopped`);
      })()),
  };
}
