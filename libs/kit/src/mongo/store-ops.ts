import { writeFileSync, renameSync } from 'node:fs';
import path from 'node:path';
import type { mongo } from 'mongoose';
import type { Logger } from '../logger';
import { serviceMetrics } from '../telemetry/metrics';

/** Commands that name their collection under another key than the command's own name. */
const COLLECTION_KEY: Record<string, string> = { getMore: 'collection' };

/** Counts per collection, then per operation. */
export type StoreOpCounts = Record<string, Record<string, number>>;

/**
 * Every command sent to the store, by collection and operation (decision 0111): what explains a throughput figure.
 * Exported as `voiceapi.store.operations`; `make bench` reads them through `STORE_OPS_FILE`.
 */
export class StoreOpCounter {
  private readonly counts: StoreOpCounts = {};
  private reporting = false;
  private readonly metric = serviceMetrics('store').counter<{ collection: string; operation: string }>('operations', {
    description: 'commands sent to the store, by collection and operation',
    unit: '{operation}',
  });

  record(operation: string, collection: string): void {
    const byOp = (this.counts[collection] ??= {});
    const seen = byOp[operation];
    byOp[operation] = (seen ?? 0) + 1;
    this.metric.add(1, { collection, operation });
    // Its slow-command series exists at 0 from the first command on: a dashboard or alert reading it has data, and
    // an instrument renamed shows as missing rather than as quiet.
    if (seen === undefined) slowCommands().add(0, { collection, operation });
  }

  watch(client: mongo.MongoClient): void {
    client.on('commandStarted', (e: mongo.CommandStartedEvent) => this.record(e.commandName, collectionOf(e)));
  }

  snapshot(): StoreOpCounts {
    return structuredClone(this.counts);
  }

  /** With `STORE_OPS_FILE` (benchmarks), SIGUSR2 writes the counts there, numbered, when the bench asks. */
  reportOnSignal(file = process.env.STORE_OPS_FILE): void {
    if (!file || this.reporting) return;
    this.reporting = true;
    let seq = 0;
    process.on('SIGUSR2', () => {
      try {
        const tmp = path.join(path.dirname(file), `.${path.basename(file)}.${process.pid}.tmp`);
        writeFileSync(
          tmp,
          JSON.stringify({ seq: ++seq, pid: process.pid, at: new Date().toISOString(), ops: this.counts }),
        );
        renameSync(tmp, file);
      } catch {
        /* the bench's folder is gone: nobody is reading */
      }
    });
  }
}

function collectionOf(e: mongo.CommandStartedEvent): string {
  const named = e.command[COLLECTION_KEY[e.commandName] ?? e.commandName] as unknown;
  return typeof named === 'string' ? named : `(${e.databaseName})`;
}

/** A store command slower than this is logged: the store, not the process, kept a caller waiting. */
export const SLOW_COMMAND_MS = 1_000;
/** A store command this slow or slower is counted (`STORE_SLOW_COMMAND_MS`). */
export const SLOW_COMMAND_COUNT_MS = 100;
/** Commands that wait by design (a change stream's or a tailing cursor's await). */
const WAITING_COMMANDS = new Set(['getMore']);

let slowCommandsCounter: ReturnType<typeof createSlowCommands> | undefined;
const createSlowCommands = () =>
  serviceMetrics('store').counter<{ collection: string; operation: string }>('slow_commands', {
    description:
      'Commands the store took STORE_SLOW_COMMAND_MS (default 100 ms) or longer to answer, by collection and operation',
    unit: '{command}',
  });
/** `voiceapi.store.slow_commands`, one instrument for the process (created when first needed). */
const slowCommands = () => (slowCommandsCounter ??= createSlowCommands());

/**
 * Counts commands slower than `countMs` (`voiceapi.store.slow_commands`) and logs those slower than `logMs`, so a
 * request stalled on the store says where. A waiting `getMore` is neither.
 */
export function watchSlowCommands(
  client: mongo.MongoClient,
  log: Logger,
  opts: { logMs?: number; countMs?: number } = {},
): void {
  const logMs = opts.logMs ?? SLOW_COMMAND_MS;
  const countMs = opts.countMs ?? SLOW_COMMAND_COUNT_MS;
  const slow = slowCommands();
  // The collection is read from a started event only once it proved slow.
  const started = new Map<number, mongo.CommandStartedEvent>();
  client.on('commandStarted', (e: mongo.CommandStartedEvent) => {
    if (!WAITING_COMMANDS.has(e.commandName)) started.set(e.requestId, e);
  });
  const ended = (e: mongo.CommandSucceededEvent | mongo.CommandFailedEvent) => {
    const start = started.get(e.requestId);
    if (start === undefined) return;
    started.delete(e.requestId);
    if (e.duration < Math.min(countMs, logMs)) return;
    const collection = collectionOf(start);
    if (e.duration >= countMs) slow.add(1, { collection, operation: e.commandName });
    if (e.duration >= logMs)
      log.warn(
        { command: e.commandName, collection, ms: Math.round(e.duration), failed: 'failure' in e },
        'a store command was slow',
      );
  };
  client.on('commandSucceeded', ended);
  client.on('commandFailed', ended);
}

/** The process's one counter: every connection opened by `connectMongo` reports to it. */
export const storeOps = new StoreOpCounter();
