#!/usr/bin/env node
/**
 * node deploy/local/dist/cli.js up [--data DIR] [--mongo-port N] [--kafka-port N]
 *                                  [--kafka-controller-port N] [--env-out FILE] [--quiet]
 * node deploy/local/dist/cli.js install
 *
 * `up` starts the store (MongoDB-compatible) and Kafka, prints MONGO_URL=... and KAFKA_BROKERS=... on stdout (server
 * output goes to stderr), and stops both cleanly on Ctrl-C / SIGTERM.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ensureInstalled, startLocalInfra } from './index';

const USAGE = `usage:
  cli.js up [--data DIR] [--mongo-port N] [--kafka-port N] [--kafka-controller-port N]
            [--env-out FILE] [--quiet]
      Starts the store (MongoDB-compatible) + Kafka (data in DIR, default ./.data/local-infra; ports default to free
      ones), prints MONGO_URL=... and KAFKA_BROKERS=..., stops both on Ctrl-C / SIGTERM.
  cli.js install
      Builds the store into the per-machine cache and resolves Kafka's jars if missing (runs install.sh).`;

function parseArgs(argv: string[]): Map<string, string> {
  const out = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (!a.startsWith('--')) throw new Error(`unexpected argument: ${a}`);
    const eq = a.indexOf('=');
    if (eq > 0) out.set(a.slice(2, eq), a.slice(eq + 1));
    else if (a === '--quiet') out.set('quiet', '1');
    else {
      const v = argv[++i];
      if (v === undefined) throw new Error(`missing value for ${a}`);
      out.set(a.slice(2), v);
    }
  }
  return out;
}

function port(args: Map<string, string>, name: string): number | undefined {
  const v = args.get(name);
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0 || n > 65535) throw new Error(`--${name}: invalid port ${v}`);
  return n;
}

async function up(args: Map<string, string>): Promise<number> {
  const known = ['data', 'mongo-port', 'kafka-port', 'kafka-controller-port', 'env-out', 'quiet'];
  for (const k of args.keys()) if (!known.includes(k)) throw new Error(`unknown option --${k}`);

  const dataDir = path.resolve(args.get('data') ?? path.join('.data', 'local-infra'));
  const quiet = args.has('quiet');
  const log = quiet ? undefined : (line: string): void => void process.stderr.write(`${line}\n`);

  let infra: Awaited<ReturnType<typeof startLocalInfra>> | undefined; // eslint-disable-line prefer-const -- read by shutdown() above its one assignment
  let shuttingDown = false;
  const shutdown = (signal: string): void => {
    if (shuttingDown) {
      process.stderr.write(`local-infra: ${signal} again, killing\n`);
      process.exit(130); // the 'exit' hook SIGKILLs the children
    }
    shuttingDown = true;
    process.stderr.write(`local-infra: ${signal}, stopping…\n`);
    const done = infra ? infra.stop() : Promise.resolve();
    void done.then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`local-infra: stop failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => shutdown('SIGINT'));
  process.on('SIGTERM', () => shutdown('SIGTERM'));
  process.on('SIGHUP', () => shutdown('SIGHUP'));

  process.stderr.write(`local-infra: starting the store and Kafka (data in ${dataDir})…\n`);
  const started = Date.now();
  infra = await startLocalInfra({
    dataDir,
    mongoPort: port(args, 'mongo-port'),
    kafkaPort: port(args, 'kafka-port'),
    kafkaControllerPort: port(args, 'kafka-controller-port'),
    log,
  });
  if (shuttingDown) {
    await infra.stop();
    return 0;
  }

  const env = `MONGO_URL=${infra.mongoUrl}\nKAFKA_BROKERS=${infra.kafkaBrokers.join(',')}\n`;
  const envFile = args.get('env-out');
  if (envFile) fs.writeFileSync(envFile, env);
  process.stdout.write(env);
  process.stderr.write(
    `local-infra: ready in ${((Date.now() - started) / 1000).toFixed(1)} s ` +
      `(store pid ${infra.store.pid}, kafka pid ${infra.kafka.pid}); Ctrl-C to stop\n`,
  );

  const why = await infra.exited;
  if (shuttingDown) return new Promise<number>(() => undefined); // shutdown() exits
  process.stderr.write(`local-infra: ${why}, stopping the other server\n`);
  await infra.stop();
  return 1;
}

async function main(): Promise<number> {
  const [cmd, ...rest] = process.argv.slice(2);
  switch (cmd) {
    case 'up':
      return up(parseArgs(rest));
    case 'install':
      await ensureInstalled();
      return 0;
    case undefined:
    case '-h':
    case '--help':
    case 'help':
      process.stdout.write(`${USAGE}\n`);
      return cmd === undefined ? 2 : 0;
    default:
      process.stderr.write(`unknown command: ${cmd}\n${USAGE}\n`);
      return 2;
  }
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`local-infra: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  },
);
