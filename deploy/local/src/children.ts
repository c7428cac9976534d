/**
 * Child processes that never outlive their parent: SIGTERM then SIGKILL on stop, SIGKILL from an
 * exit hook, and (Linux, util-linux `setpriv`) a parent-death signal for when the parent is killed.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { LogFn } from './paths';

const STOP_TIMEOUT_MS = 10_000;

const live = new Set<ChildProcess>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // Last resort when stop() was not called: never leave servers behind the parent.
  process.on('exit', () => {
    for (const child of live) {
      try {
        child.kill('SIGKILL');
      } catch {
        /* already gone */
      }
    }
  });
}

let setprivPath: string | null | undefined;

/** util-linux `setpriv`, used to give children a parent-death signal (Linux only). */
function findSetpriv(): string | null {
  if (setprivPath !== undefined) return setprivPath;
  setprivPath = null;
  if (process.platform !== 'linux') return null;
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const candidate = path.join(dir, 'setpriv');
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      setprivPath = candidate;
      break;
    } catch {
      /* keep looking */
    }
  }
  return setprivPath;
}

export interface ManagedProcess {
  name: string;
  pid: number;
  /** Resolves once the process has exited, with how: "code 1", "signal SIGKILL", "spawn error". */
  exited: Promise<string>;
  hasExited(): boolean;
  /** Last output lines, for error messages. */
  tail(): string;
  /** Called for every output line (stdout and stderr); not with `logFile`. */
  onLine(fn: (line: string) => void): void;
  /** SIGTERM, wait, SIGKILL after the stop timeout. Safe to call more than once, and unbound (a closure). */
  stop: () => Promise<void>;
}

export interface SpawnOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Receives each output line prefixed with `[name] ` (pipe mode). */
  log?: LogFn;
  /** Append stdout and stderr to this file instead of piping them. */
  logFile?: string;
  /** SIGTERM → SIGKILL delay (default 10 s). */
  stopTimeoutMs?: number;
}

function lineSplitter(onLine: (line: string) => void): (chunk: Buffer) => void {
  let buf = '';
  return (chunk) => {
    buf += chunk.toString('utf8');
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i).replace(/\r$/, '');
      buf = buf.slice(i + 1);
      if (line.length > 0) onLine(line);
    }
  };
}

/** The last lines of a log file (bounded read). */
function fileTail(file: string, lines = 40): string {
  try {
    const fd = fs.openSync(file, 'r');
    try {
      const size = fs.fstatSync(fd).size;
      const len = Math.min(size, 16 * 1024);
      const buf = Buffer.alloc(len);
      fs.readSync(fd, buf, 0, len, size - len);
      return buf
        .toString('utf8')
        .split('\n')
        .slice(-lines - 1)
        .join('\n');
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return '';
  }
}

export function spawnProcess(name: string, command: string, args: string[], opts: SpawnOptions = {}): ManagedProcess {
  installExitHook();
  // With setpriv the child gets SIGKILL if this process dies without running 'exit' handlers
  // (SIGKILL, crash). setpriv execs the command, so the pid is the server's own.
  const setpriv = findSetpriv();
  const [cmd, argv] = setpriv ? [setpriv, ['--pdeathsig', 'SIGKILL', '--', command, ...args]] : [command, args];
  let out: number | undefined;
  if (opts.logFile) {
    fs.mkdirSync(path.dirname(opts.logFile), { recursive: true });
    out = fs.openSync(opts.logFile, 'a');
  }
  const child = spawn(cmd, argv, {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    stdio: ['ignore', out ?? 'pipe', out ?? 'pipe'],
    // A process group of its own: a terminal's Ctrl-C reaches the parent only, which stops the
    // children in order (the gateway first, the store and Kafka last), not all at once.
    detached: true,
  });
  if (out !== undefined) fs.closeSync(out); // the child holds its own copy
  live.add(child);

  const recent: string[] = [];
  const listeners: Array<(line: string) => void> = [];
  const handle = (line: string): void => {
    recent.push(line);
    if (recent.length > 60) recent.shift();
    opts.log?.(`[${name}] ${line}`);
    for (const l of listeners) l(line);
  };
  child.stdout?.on('data', lineSplitter(handle));
  child.stderr?.on('data', lineSplitter(handle));

  let done = false;
  const exited = new Promise<string>((resolve) => {
    child.once('exit', (code, signal) => {
      done = true;
      live.delete(child);
      resolve(signal ? `signal ${signal}` : `code ${code}`);
    });
    child.once('error', (err) => {
      // spawn failure (e.g. ENOENT): no 'exit' follows
      handle(`spawn error: ${err.message}`);
      done = true;
      live.delete(child);
      resolve('spawn error');
    });
  });

  const stopTimeoutMs = opts.stopTimeoutMs ?? STOP_TIMEOUT_MS;
  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      if (done) return;
      child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        exited.then(() => false),
        new Promise<boolean>((r) => {
          timer = setTimeout(() => r(true), stopTimeoutMs);
        }),
      ]);
      clearTimeout(timer);
      if (timedOut && !done) {
        opts.log?.(`[${name}] did not stop within ${stopTimeoutMs / 1000} s, killing`);
        child.kill('SIGKILL');
        await exited;
      }
    })();
    return stopping;
  };

  return {
    name,
    pid: child.pid ?? -1,
    exited,
    hasExited: () => done,
    tail: () => (opts.logFile ? fileTail(opts.logFile) : recent.join('\n')),
    onLine: (fn) => listeners.push(fn),
    stop,
  };
}

/** Runs a command to its end; rejects with its output when it fails. */
export async function runToCompletion(name: string, command: string, args: string[], log?: LogFn): Promise<void> {
  const proc = spawnProcess(name, command, args, { log });
  const how = await proc.exited;
  if (how !== 'code 0') throw new Error(`${name} failed (${how}):\n${proc.tail()}`);
}
