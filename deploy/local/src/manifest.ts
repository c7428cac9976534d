/**
 * The service manifest (services/manifest.json): every process of the platform, once. `make run`,
 * the test harness, the chart checks and the image build all read it, so adding a service is one
 * entry there (plus its code and chart), not an edit in each of them.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** One process. */
export interface ProcessEntry {
  /** Process name, as in logs and `[run]` lines. */
  readonly name: string;
  /** npm workspace package (the image build installs its production dependencies). */
  readonly package: string;
  /** Workspace directory, relative to the repository root. */
  readonly workspace: string;
  /** Built entry file, relative to the repository root (inside `workspace`). */
  readonly entry: string;
  /** grpc: a backing service the gateway calls; http: the gateway (exactly one). */
  readonly protocol: 'grpc' | 'http';
  /** Environment setting holding the port it listens on. */
  readonly portEnv: string;
  /** Its port in containers and charts (`make run` and tests pick free ports instead). */
  readonly port: number;
  /** gRPC services only: the setting that tells callers its address (host:port). */
  readonly addressEnv?: string;
  /** Its MongoDB database (MONGO_DB); the harness adds a suffix per suite. */
  readonly mongoDb: string;
  /** Its chart, charts/<chart>, listed in the platform umbrella. */
  readonly chart: string;
  /**
   * Settings holding secrets only this process may know (e.g. a signing key): `make run` makes each
   * once and keeps it in the data directory, tests make them per suite, charts read them from a Secret.
   */
  readonly secrets?: readonly string[];
}

export interface Manifest {
  /** Every process, in file order. */
  readonly processes: readonly ProcessEntry[];
  /** The gRPC services, in start order. */
  readonly services: readonly ProcessEntry[];
  /** The one http process. */
  readonly gateway: ProcessEntry;
}

/**
 * Node settings every process of the manifest runs with: `make run` and the test harness pass them
 * as NODE_OPTIONS, the image sets the same (deploy/images/Dockerfile; a unit test keeps the two equal).
 * Young-generation semi-spaces of 8 MB: with V8's default each scavenge held a request up for
 * 6–10 ms, which was most of the CRM lookup's p99; at 8 MB a scavenge takes about 2 ms, at no cost
 * to throughput that the benches could see (decision 0116).
 */
export const PROCESS_NODE_OPTIONS = '--max-semi-space-size=8';

/** NODE_OPTIONS for a process: ours, then any the environment already sets (a later flag wins). */
export function processNodeOptions(env: Record<string, string | undefined> = process.env): string {
  return [PROCESS_NODE_OPTIONS, env.NODE_OPTIONS].filter((o) => o !== undefined && o !== '').join(' ');
}

/** services/manifest.json (this file is compiled to deploy/local/dist/manifest.js). */
export const manifestPath = path.resolve(__dirname, '../../../services/manifest.json');

const FIELDS = [
  'name',
  'package',
  'workspace',
  'entry',
  'protocol',
  'portEnv',
  'port',
  'addressEnv',
  'mongoDb',
  'chart',
  'secrets',
];
const NAME = /^[a-z][a-z0-9-]{0,50}[a-z0-9]$/;
const ENV = /^[A-Z][A-Z0-9_]*$/;
const REL_PATH = /^(?!\/)(?!.*(^|\/)\.\.(\/|$))[A-Za-z0-9._/@-]+$/;

/** Validates the parsed JSON; every problem is reported at once, naming the entry. */
export function parseManifest(json: unknown, source = 'manifest'): Manifest {
  const problems: string[] = [];
  const list = (json as { processes?: unknown } | null)?.processes;
  if (!Array.isArray(list) || list.length === 0) throw new Error(`${source}: "processes" must be a non-empty array`);

  const entries: ProcessEntry[] = [];
  list.forEach((raw: unknown, i) => {
    const e = (raw ?? {}) as Record<string, unknown>;
    const where = `${source}: processes[${i}]${typeof e.name === 'string' ? ` (${e.name})` : ''}`;
    const bad = (field: string, why: string) => problems.push(`${where}.${field}: ${why}`);
    for (const k of Object.keys(e)) if (!FIELDS.includes(k)) bad(k, 'unknown field');
    const str = (field: string, re?: RegExp): string => {
      const v = e[field];
      if (typeof v !== 'string' || v.length === 0) bad(field, 'required string');
      else if (re && !re.test(v)) bad(field, `${JSON.stringify(v)} does not match ${re}`);
      return typeof v === 'string' ? v : '';
    };
    const name = str('name', NAME);
    const workspace = str('workspace', REL_PATH);
    const entry = str('entry', REL_PATH);
    if (workspace && entry && !entry.startsWith(`${workspace}/`))
      bad('entry', `must be inside workspace ${workspace}/`);
    const protocol = e.protocol;
    if (protocol !== 'grpc' && protocol !== 'http') bad('protocol', 'must be "grpc" or "http"');
    const port = e.port;
    if (typeof port !== 'number' || !Number.isInteger(port) || port < 1 || port > 65535)
      bad('port', 'must be a port number');
    let addressEnv: string | undefined;
    if (protocol === 'grpc') addressEnv = str('addressEnv', ENV);
    else if (e.addressEnv !== undefined)
      bad('addressEnv', 'only gRPC services have one (the gateway is called by tenants)');
    const secrets = e.secrets;
    if (
      secrets !== undefined &&
      (!Array.isArray(secrets) || secrets.some((x) => typeof x !== 'string' || !ENV.test(x)))
    )
      bad('secrets', 'must be a list of setting names');
    entries.push({
      name,
      package: str('package'),
      workspace,
      entry,
      protocol: protocol === 'http' ? 'http' : 'grpc',
      portEnv: str('portEnv', ENV),
      port: typeof port === 'number' ? port : 0,
      ...(addressEnv ? { addressEnv } : {}),
      mongoDb: str('mongoDb'),
      chart: str('chart', NAME),
      ...(Array.isArray(secrets) && secrets.length > 0 && { secrets: secrets as string[] }),
    });
  });

  for (const field of ['name', 'package', 'workspace', 'entry', 'addressEnv', 'mongoDb', 'chart'] as const) {
    const seen = new Set<string>();
    for (const e of entries) {
      const v = e[field];
      if (v === undefined || v === '') continue;
      if (seen.has(v)) problems.push(`${source}: ${field} ${JSON.stringify(v)} appears twice`);
      seen.add(v);
    }
  }
  const http = entries.filter((e) => e.protocol === 'http');
  if (http.length !== 1)
    problems.push(`${source}: exactly one "http" process (the gateway) expected, found ${http.length}`);
  if (problems.length) throw new Error(`invalid service manifest:\n  ${problems.join('\n  ')}`);

  return {
    processes: entries,
    services: entries.filter((e) => e.protocol === 'grpc'),
    gateway: http[0]!,
  };
}

/** Reads and validates services/manifest.json (or `file`). */
export function loadManifest(file = manifestPath): Manifest {
  let json: unknown;
  try {
    json = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read the service manifest ${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
  return parseManifest(json, path.relative(process.cwd(), file) || file);
}

/**
 * Every gRPC service's address setting, from the ports it was given: what the gateway (and any
 * process that calls another) needs, e.g. { COMPANIES_GRPC_ADDR: '127.0.0.1:50061' }.
 */
export function addressSettings(
  manifest: Manifest,
  ports: ReadonlyMap<string, number>,
  host = '127.0.0.1',
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const s of manifest.services) {
    const port = ports.get(s.name);
    if (port === undefined) throw new Error(`no port for ${s.name}`);
    out[s.addressEnv!] = `${host}:${port}`;
  }
  return out;
}
