/**
 * Docker-free local infrastructure for `make run` and the test harness:
 *
 *  - FerretDB 1.24 (MongoDB wire protocol, SQLite backend), built by install.sh from ../ferretdb
 *  - Apache Kafka 3.9 single-node KRaft broker, jars resolved by install.sh from ../kafka/pom.xml
 *
 * Both run as child processes of the calling Node process, listen on 127.0.0.1 only, and keep
 * their data in the given directory across restarts. Only Node built-ins are used.
 *
 * FerretDB 1.24 gaps met with mongodb 6.x / mongoose 8.x (production runs real MongoDB 7):
 *  - findAndModify `fields` is NotImplemented (code 238): any projection on findOneAndUpdate /
 *    findOneAndDelete fails, including the implicit one mongoose adds for `select: false` paths
 *    and an empty `{}`. Project in application code instead.
 *  - A unique-index violation caused by an update/replace (not an insert or upsert-insert) comes
 *    back as code 1 InternalError "UNIQUE constraint failed", not 11000. E11000 errors carry no
 *    keyPattern/keyValue.
 *  - Concurrent upserts on one unique key: MongoDB retries internally, FerretDB returns 11000 to
 *    all but one; callers should retry an upsert once on 11000.
 *  - No sessions/transactions (driver `autocommit` field rejected), no TTL indexes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';

// ------------------------------------------------------------------ paths

/** deploy/local (this file is compiled to deploy/local/dist/index.js). */
const ROOT = path.resolve(__dirname, '..');
const BIN_DIR = path.join(ROOT, '.bin');

export const paths = {
  root: ROOT,
  installScript: path.join(ROOT, 'install.sh'),
  ferretBin: path.join(BIN_DIR, 'ferretdb'),
  ferretStamp: path.join(BIN_DIR, 'ferretdb.sha256'),
  ferretInputs: ['go.mod', 'go.sum', 'main.go'].map((f) => path.join(ROOT, 'ferretdb', f)),
  kafkaLibs: path.join(BIN_DIR, 'kafka-libs'),
  kafkaStamp: path.join(BIN_DIR, 'kafka-libs', '.pom.sha256'),
  kafkaPom: path.join(ROOT, 'kafka', 'pom.xml'),
  kafkaLog4j: path.join(ROOT, 'kafka', 'log4j.properties'),
} as const;

export type LogFn = (line: string) => void;

const STOP_TIMEOUT_MS = 10_000;
const FERRET_START_TIMEOUT_MS = 30_000;
const KAFKA_START_TIMEOUT_MS = 120_000;

// ------------------------------------------------------------- installing

/** Same digest as install.sh: sha256 of the input files concatenated in order. */
function inputsHash(files: readonly string[]): string {
  const h = createHash('sha256');
  for (const f of files) h.update(fs.readFileSync(f));
  return h.digest('hex');
}

function readTrim(file: string): string | undefined {
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
}

/** True when both the FerretDB binary and the Kafka jars are present and match their inputs. */
export function isInstalled(): boolean {
  try {
    if (!fs.existsSync(paths.ferretBin)) return false;
    if (readTrim(paths.ferretStamp) !== inputsHash(paths.ferretInputs)) return false;
    if (!fs.readdirSync(paths.kafkaLibs).some((f) => /^kafka_2\.13-.*\.jar$/.test(f))) return false;
    return readTrim(paths.kafkaStamp) === inputsHash([paths.kafkaPom]);
  } catch {
    return false;
  }
}

let installing: Promise<void> | undefined;

/**
 * Runs deploy/local/install.sh (stdio inherited, so build progress shows) when the binaries are
 * missing or stale. The first build of FerretDB takes a minute or two; afterwards this is a no-op.
 */
export function ensureInstalled(): Promise<void> {
  if (isInstalled()) return Promise.resolve();
  installing ??= new Promise<void>((resolve, reject) => {
    const child = spawn('bash', [paths.installScript], { stdio: 'inherit' });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (code === 0) resolve();
      else reject(new Error(`${paths.installScript} failed (${signal ?? `exit ${code}`})`));
    });
  }).finally(() => {
    installing = undefined;
  });
  return installing;
}

// ------------------------------------------------------- child processes

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

interface Managed {
  name: string;
  child: ChildProcess;
  pid: number;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  exited: Promise<string>;
  hasExited(): boolean;
  /** Last output lines, for error messages. */
  tail(): string;
  /** Called for every output line (stdout and stderr). */
  onLine(fn: (line: string) => void): void;
  stop(): Promise<void>;
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

function spawnManaged(
  name: string,
  command: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv; log?: LogFn },
): Managed {
  installExitHook();
  // With setpriv the child gets SIGKILL if this process dies without running 'exit' handlers
  // (SIGKILL, crash). setpriv execs the command, so the pid is the server's own.
  const setpriv = findSetpriv();
  const [cmd, argv] = setpriv
    ? [setpriv, ['--pdeathsig', 'SIGKILL', '--', command, ...args]]
    : [command, args];
  const child = spawn(cmd, argv, {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
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
      resolve(signal ?? String(code));
    });
    child.once('error', (err) => {
      // spawn failure (e.g. ENOENT): no 'exit' follows
      handle(`spawn error: ${err.message}`);
      done = true;
      live.delete(child);
      resolve('spawn-error');
    });
  });

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      if (done) return;
      child.kill('SIGTERM');
      let timer: NodeJS.Timeout | undefined;
      const timedOut = await Promise.race([
        exited.then(() => false),
        new Promise<boolean>((r) => {
          timer = setTimeout(() => r(true), STOP_TIMEOUT_MS);
        }),
      ]);
      clearTimeout(timer);
      if (timedOut && !done) {
        opts.log?.(`[${name}] did not stop within ${STOP_TIMEOUT_MS / 1000} s, killing`);
        child.kill('SIGKILL');
        await exited;
      }
    })();
    return stopping;
  };

  return {
    name,
    child,
    pid: child.pid ?? -1,
    exited,
    hasExited: () => done,
    tail: () => recent.join('\n'),
    onLine: (fn) => listeners.push(fn),
    stop,
  };
}

/**
 * Polls `probe` until it returns true. Fails early if the process exits, and after `timeoutMs`.
 */
async function waitReady(
  proc: Managed,
  what: string,
  timeoutMs: number,
  probe: () => Promise<boolean>,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastError = '';
  while (Date.now() < deadline) {
    if (proc.hasExited()) break;
    try {
      if (await probe()) return;
    } catch (err) {
      lastError = err instanceof Error ? err.message : String(err);
    }
    if (proc.hasExited()) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  const reason = proc.hasExited()
    ? `exited (${await proc.exited}) before ${what} was ready`
    : `${what} not ready after ${timeoutMs / 1000} s${lastError ? ` (last probe error: ${lastError})` : ''}`;
  await proc.stop();
  throw new Error(`${proc.name} ${reason}; last output:\n${proc.tail()}`);
}

// ------------------------------------------------------------- networking

/** Free TCP ports on 127.0.0.1 (all held open together, so they are distinct). */
export async function freePorts(count: number): Promise<number[]> {
  const servers: net.Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) {
      const srv = net.createServer();
      servers.push(srv);
      await new Promise<void>((resolve, reject) => {
        srv.once('error', reject);
        srv.listen(0, '127.0.0.1', resolve);
      });
      ports.push((srv.address() as net.AddressInfo).port);
    }
    return ports;
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  }
}

/** Connects, writes `request`, and resolves with one length-prefixed reply frame. */
function roundTrip(
  port: number,
  request: Buffer,
  frameLength: (head: Buffer) => number,
  timeoutMs = 2000,
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const sock = net.connect({ host: '127.0.0.1', port });
    let buf = Buffer.alloc(0);
    const finish = (err: Error | null, data?: Buffer): void => {
      sock.destroy();
      if (err) reject(err);
      else resolve(data as Buffer);
    };
    sock.setTimeout(timeoutMs, () => finish(new Error('timeout')));
    sock.once('error', (err) => finish(err));
    sock.once('close', () => finish(new Error('connection closed')));
    sock.once('connect', () => sock.write(request));
    sock.on('data', (chunk: Buffer) => {
      buf = Buffer.concat([buf, chunk]);
      if (buf.length < 4) return;
      const len = frameLength(buf);
      if (len > 64 * 1024 * 1024) return finish(new Error(`bad frame length ${len}`));
      if (buf.length >= len) finish(null, buf.subarray(0, len));
    });
  });
}

// --- MongoDB wire protocol: OP_MSG { hello: 1, $db: "admin" } ---------------

function bsonCString(s: string): Buffer {
  return Buffer.concat([Buffer.from(s, 'utf8'), Buffer.from([0])]);
}

function bsonDoc(elements: Buffer[]): Buffer {
  const body = Buffer.concat([...elements, Buffer.from([0])]);
  const len = Buffer.alloc(4);
  len.writeInt32LE(body.length + 4);
  return Buffer.concat([len, body]);
}

function bsonInt32(name: string, v: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32LE(v);
  return Buffer.concat([Buffer.from([0x10]), bsonCString(name), b]);
}

function bsonString(name: string, v: string): Buffer {
  const s = bsonCString(v);
  const len = Buffer.alloc(4);
  len.writeInt32LE(s.length);
  return Buffer.concat([Buffer.from([0x02]), bsonCString(name), len, s]);
}

/** Reads the numeric top-level field `name` of a BSON document (double, int32 or int64). */
function bsonNumberField(doc: Buffer, name: string): number | undefined {
  const end = doc.readInt32LE(0) - 1;
  let i = 4;
  while (i < end) {
    const type = doc[i++] as number;
    const nameEnd = doc.indexOf(0, i);
    const key = doc.toString('utf8', i, nameEnd);
    i = nameEnd + 1;
    let size: number;
    switch (type) {
      case 0x01: // double
        if (key === name) return doc.readDoubleLE(i);
        size = 8;
        break;
      case 0x10: // int32
        if (key === name) return doc.readInt32LE(i);
        size = 4;
        break;
      case 0x12: // int64
        if (key === name) return Number(doc.readBigInt64LE(i));
        size = 8;
        break;
      case 0x09: // datetime
      case 0x11: // timestamp
        size = 8;
        break;
      case 0x02: // string
      case 0x0d: // javascript
      case 0x0e: // symbol
        size = 4 + doc.readInt32LE(i);
        break;
      case 0x03: // document
      case 0x04: // array
      case 0x0f: // code with scope
        size = doc.readInt32LE(i);
        break;
      case 0x05: // binary
        size = 4 + 1 + doc.readInt32LE(i);
        break;
      case 0x07: // ObjectId
        size = 12;
        break;
      case 0x08: // bool
        size = 1;
        break;
      case 0x0a: // null
      case 0x06: // undefined
      case 0x7f: // max key
      case 0xff: // min key
        size = 0;
        break;
      case 0x0b: {
        // regex: two cstrings
        const a = doc.indexOf(0, i);
        size = doc.indexOf(0, a + 1) + 1 - i;
        break;
      }
      case 0x13: // decimal128
        size = 16;
        break;
      default:
        return undefined;
    }
    i += size;
  }
  return undefined;
}

let requestId = 1;

/** A real MongoDB handshake: OP_MSG `hello` round trip, true when the reply has ok: 1. */
export async function mongoHello(port: number): Promise<boolean> {
  const doc = bsonDoc([bsonInt32('hello', 1), bsonString('$db', 'admin')]);
  const header = Buffer.alloc(16 + 4 + 1);
  header.writeInt32LE(16 + 4 + 1 + doc.length, 0); // messageLength
  header.writeInt32LE(requestId++, 4); // requestID
  header.writeInt32LE(0, 8); // responseTo
  header.writeInt32LE(2013, 12); // OP_MSG
  header.writeUInt32LE(0, 16); // flagBits
  header.writeUInt8(0, 20); // section kind 0: body
  const reply = await roundTrip(port, Buffer.concat([header, doc]), (h) => h.readInt32LE(0));
  if (reply.readInt32LE(12) !== 2013 || reply.readUInt8(20) !== 0) return false;
  return bsonNumberField(reply.subarray(21), 'ok') === 1;
}

// --- Kafka protocol: Metadata v4 ----------------------------------------------

/**
 * Sends a Metadata v4 request (all topics, no auto-creation) and resolves true when the broker
 * lists at least one broker and a controller: the broker is unfenced and serving requests.
 */
export async function kafkaMetadataReady(port: number): Promise<boolean> {
  const clientId = Buffer.from('local-infra-probe');
  const body = Buffer.alloc(2 + 2 + 4 + 2 + clientId.length + 4 + 1);
  let o = 0;
  o = body.writeInt16BE(3, o); // api_key: Metadata
  o = body.writeInt16BE(4, o); // api_version
  o = body.writeInt32BE(requestId++, o); // correlation_id
  o = body.writeInt16BE(clientId.length, o);
  o += clientId.copy(body, o);
  o = body.writeInt32BE(-1, o); // topics: null = all
  body.writeInt8(0, o); // allow_auto_topic_creation: false
  const size = Buffer.alloc(4);
  size.writeInt32BE(body.length);
  const reply = await roundTrip(port, Buffer.concat([size, body]), (h) => 4 + h.readInt32BE(0));
  // size(4) correlation_id(4) throttle_time_ms(4) brokers[...]
  let p = 12;
  const brokers = reply.readInt32BE(p);
  p += 4;
  for (let b = 0; b < brokers; b++) {
    p += 4; // node_id
    p += 2 + reply.readInt16BE(p); // host
    p += 4; // port
    const rack = reply.readInt16BE(p);
    p += 2 + Math.max(rack, 0);
  }
  const clusterIdLen = reply.readInt16BE(p);
  p += 2 + Math.max(clusterIdLen, 0);
  const controllerId = reply.readInt32BE(p);
  return brokers > 0 && controllerId >= 0;
}

// ---------------------------------------------------------------- FerretDB

export interface FerretOptions {
  /** SQLite data directory (created if missing). */
  dataDir: string;
  /** 0 or undefined: a free port. */
  port?: number;
  log?: LogFn;
  /** FerretDB log level (debug, info, warn, error). Default: error (warn logs every error reply in full), or $FERRETDB_LOG_LEVEL. */
  logLevel?: string;
}

export interface FerretHandle {
  /** mongodb://127.0.0.1:PORT/ */
  url: string;
  port: number;
  pid: number;
  /** Resolves (with exit code or signal) when the process exits. */
  exited: Promise<string>;
  /** SIGTERM, wait (SIGKILL after 10 s). Safe to call more than once. */
  stop(): Promise<void>;
}

export async function startFerret(opts: FerretOptions): Promise<FerretHandle> {
  if (!fs.existsSync(paths.ferretBin)) {
    throw new Error(`${paths.ferretBin} is missing: run deploy/local/install.sh (or ensureInstalled())`);
  }
  const dataDir = path.resolve(opts.dataDir);
  fs.mkdirSync(dataDir, { recursive: true });
  const port = opts.port || (await freePorts(1))[0]!;
  const logLevel = opts.logLevel ?? process.env.FERRETDB_LOG_LEVEL ?? 'error';

  const proc = spawnManaged(
    'ferretdb',
    paths.ferretBin,
    ['-listen', `127.0.0.1:${port}`, '-data', dataDir, '-log-level', logLevel],
    { log: opts.log },
  );
  await waitReady(proc, 'MongoDB handshake', FERRET_START_TIMEOUT_MS, () => mongoHello(port));
  return {
    url: `mongodb://127.0.0.1:${port}/`,
    port,
    pid: proc.pid,
    exited: proc.exited,
    stop: proc.stop,
  };
}

// ------------------------------------------------------------------- Kafka

export interface KafkaOptions {
  /** Broker data directory: server.properties, cluster.id and logs/ live here. */
  dataDir: string;
  /** PLAINTEXT port; 0 or undefined: a free port. */
  port?: number;
  /** CONTROLLER port; 0 or undefined: a free port. */
  controllerPort?: number;
  log?: LogFn;
  /** Broker log level for kafka.* loggers (WARN by default, or $KAFKA_LOG_LEVEL). */
  logLevel?: string;
  /** JVM heap flags. Default ['-Xms256m', '-Xmx512m']. */
  heap?: string[];
}

export interface KafkaHandle {
  /** ['127.0.0.1:PORT'] */
  brokers: string[];
  port: number;
  controllerPort: number;
  pid: number;
  exited: Promise<string>;
  /** SIGTERM (controlled shutdown), wait (SIGKILL after 10 s). Safe to call more than once. */
  stop(): Promise<void>;
}

function javaBin(): string {
  const home = process.env.JAVA_HOME;
  if (home) {
    const candidate = path.join(home, 'bin', 'java');
    if (fs.existsSync(candidate)) return candidate;
  }
  return 'java';
}

/** A Kafka Uuid (16 random bytes, URL-safe base64 without padding), as StorageTool random-uuid. */
function kafkaUuid(): string {
  for (;;) {
    const id = randomBytes(16).toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}

function serverProperties(o: { port: number; controllerPort: number; logDir: string }): string {
  return [
    '# Generated by @voiceapi/local-infra at every start; edits are overwritten.',
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@127.0.0.1:${o.controllerPort}`,
    `listeners=PLAINTEXT://127.0.0.1:${o.port},CONTROLLER://127.0.0.1:${o.controllerPort}`,
    `advertised.listeners=PLAINTEXT://127.0.0.1:${o.port}`,
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    'inter.broker.listener.name=PLAINTEXT',
    'controller.listener.names=CONTROLLER',
    `log.dirs=${o.logDir}`,
    'num.partitions=3',
    'default.replication.factor=1',
    'min.insync.replicas=1',
    'auto.create.topics.enable=true',
    'offsets.topic.replication.factor=1',
    // Fewer internal partitions: faster first consumer-group join on a 2-core machine.
    'offsets.topic.num.partitions=1',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'transaction.state.log.num.partitions=1',
    'group.initial.rebalance.delay.ms=0',
    'num.network.threads=2',
    'num.io.threads=2',
    'num.recovery.threads.per.data.dir=1',
    'log.retention.hours=168',
    '',
  ].join('\n');
}

function runToCompletion(name: string, command: string, args: string[], log?: LogFn): Promise<void> {
  const proc = spawnManaged(name, command, args, { log });
  return proc.exited.then((code) => {
    if (code !== '0') throw new Error(`${name} failed (${code}):\n${proc.tail()}`);
  });
}

export async function startKafka(opts: KafkaOptions): Promise<KafkaHandle> {
  const libs = paths.kafkaLibs;
  if (!fs.existsSync(libs) || !fs.readdirSync(libs).some((f) => f.startsWith('kafka_2.13-'))) {
    throw new Error(`${libs} is missing: run deploy/local/install.sh (or ensureInstalled())`);
  }
  const dataDir = path.resolve(opts.dataDir);
  const logDir = path.join(dataDir, 'logs');
  fs.mkdirSync(logDir, { recursive: true });

  let port = opts.port || 0;
  let controllerPort = opts.controllerPort || 0;
  if (!port || !controllerPort) {
    const free = (await freePorts(2)).filter((p) => p !== port && p !== controllerPort);
    if (!port) port = free.shift()!;
    if (!controllerPort) controllerPort = free.shift()!;
  }

  const propsFile = path.join(dataDir, 'server.properties');
  fs.writeFileSync(propsFile, serverProperties({ port, controllerPort, logDir }));

  const level = opts.logLevel ?? process.env.KAFKA_LOG_LEVEL ?? 'WARN';
  const jvm = [
    ...(opts.heap ?? ['-Xms256m', '-Xmx512m']),
    '-XX:+UseG1GC',
    '-XX:MaxGCPauseMillis=20',
    '-Djava.awt.headless=true',
    `-Dlog4j.configuration=file:${paths.kafkaLog4j}`,
    `-Dlocal.kafka.level=${level.toUpperCase()}`,
    '-cp',
    `${libs}${path.sep}*`,
  ];

  // Format once; the cluster id is kept in the data dir (and in logs/meta.properties).
  if (!fs.existsSync(path.join(logDir, 'meta.properties'))) {
    const idFile = path.join(dataDir, 'cluster.id');
    let clusterId = readTrim(idFile);
    if (!clusterId) {
      clusterId = kafkaUuid();
      fs.writeFileSync(idFile, `${clusterId}\n`);
    }
    opts.log?.(`[kafka] formatting ${logDir} (cluster id ${clusterId})`);
    await runToCompletion(
      'kafka-storage',
      javaBin(),
      [...jvm, 'kafka.tools.StorageTool', 'format', '-t', clusterId, '-c', propsFile, '--ignore-formatted'],
      opts.log,
    );
  }

  const proc = spawnManaged('kafka', javaBin(), [...jvm, 'kafka.Kafka', propsFile], {
    cwd: dataDir,
    log: opts.log,
  });
  await waitReady(proc, 'broker (Metadata lists an unfenced broker)', KAFKA_START_TIMEOUT_MS, () =>
    kafkaMetadataReady(port),
  );
  return {
    brokers: [`127.0.0.1:${port}`],
    port,
    controllerPort,
    pid: proc.pid,
    exited: proc.exited,
    stop: proc.stop,
  };
}

// ------------------------------------------------------------------- both

export interface LocalInfraOptions {
  /** FerretDB data goes to <dataDir>/mongo, Kafka to <dataDir>/kafka. */
  dataDir: string;
  mongoPort?: number;
  kafkaPort?: number;
  kafkaControllerPort?: number;
  log?: LogFn;
  /** Run install.sh first when binaries are missing or stale (default true). */
  install?: boolean;
}

export interface LocalInfra {
  mongoUrl: string;
  kafkaBrokers: string[];
  ferret: FerretHandle;
  kafka: KafkaHandle;
  /** Resolves when either server exits (by stop() or on its own). */
  exited: Promise<string>;
  /** Stops both (in parallel). Safe to call more than once. */
  stop(): Promise<void>;
}

export async function startLocalInfra(opts: LocalInfraOptions): Promise<LocalInfra> {
  if (opts.install !== false) await ensureInstalled();
  const dataDir = path.resolve(opts.dataDir);
  const [f, k] = await Promise.allSettled([
    startFerret({ dataDir: path.join(dataDir, 'mongo'), port: opts.mongoPort, log: opts.log }),
    startKafka({
      dataDir: path.join(dataDir, 'kafka'),
      port: opts.kafkaPort,
      controllerPort: opts.kafkaControllerPort,
      log: opts.log,
    }),
  ]);
  if (f.status === 'rejected' || k.status === 'rejected') {
    await Promise.all([f, k].map((r) => (r.status === 'fulfilled' ? r.value.stop() : undefined)));
    const errors = [f, k].flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    throw errors.length === 1 ? errors[0] : new AggregateError(errors, 'local infra failed to start');
  }
  const ferret = f.value;
  const kafka = k.value;
  let stopping: Promise<void> | undefined;
  return {
    mongoUrl: ferret.url,
    kafkaBrokers: kafka.brokers,
    ferret,
    kafka,
    exited: Promise.race([
      ferret.exited.then((c) => `ferretdb exited (${c})`),
      kafka.exited.then((c) => `kafka exited (${c})`),
    ]),
    stop: () => (stopping ??= Promise.all([ferret.stop(), kafka.stop()]).then(() => undefined)),
  };
}
