// Over 300 lines because each contract check stands beside the planted breaks (canaries) that must fail it.
/**
 * The contracts as released (releases/record.json, releases/contracts/) and the checks of today's
 * tree against them. `make contracts-check` runs `main` below; `make release` (release.ts) uses
 * `snapshotContracts` to record what it releases.
 *
 * Three contracts cross a release boundary, each checked by the tool made for it:
 * - protobuf (gRPC services and Kafka events): `buf breaking` against the released image, with the
 *   rules of proto/buf.yaml (WIRE_JSON and the service rules); an RPC may go only once a release
 *   marked it `deprecated` (its callers stopped calling it first);
 * - the tenant API: `oasdiff breaking` of the served document against the released one, webhook
 *   payloads judged as responses (tenants' servers read them), an operation or field removed only
 *   after a release carried its deprecation and its sunset (at least 90 days later) has passed;
 * - chart values: every key a released values file could set is still accepted with its type,
 *   unless the chart's major version moved (scripts/values-compat.py).
 * Each check is proven able to refuse: a canary (a planted breaking change) must fail it.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  cpSync,
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  mkdirSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import { servedDocument } from './served-document';
import { gitTree, unreleasedCheck, writeShippedChangeset, type Tree } from './shipped';

export const ROOT = path.resolve(__dirname, '..');
export const RELEASES = path.join(ROOT, 'releases');
export const CONTRACTS = path.join(RELEASES, 'contracts');
const RECORD = path.join(RELEASES, 'record.json');
const BUF = path.join(ROOT, 'node_modules/.bin/buf');

/** One deployable as last released. */
export interface Released {
  version: string;
  /** The release commit: its tree is what was built and shipped. */
  commit: string;
  date: string;
  /**
   * Its image, built from `commit` by make release (decision 0134): `docker.io/voiceapi/<name>:<version>`;
   * `digest` podman's manifest digest of it as built (its `id` when `digestOf` says so); `id` its config digest.
   */
  image?: { name: string; digest: string; digestOf?: 'image id'; id?: string };
}

export interface ReleaseRecord {
  '//'?: string[];
  /** The tenant API (`/api/v1`) as last released with the gateway. */
  api: { version: string; date: string };
  /** Each of the manifest's processes, by name. */
  services: Record<string, Released>;
  /**
   * Each chart as last released, by chart name: the version its values schema was checked against;
   * `package` (releases/charts/<chart>-<version>.tgz, made by helm package from the release commit)
   * and `digest` (that file's sha256) since decision 0134.
   */
  charts: Record<string, { version: string; package?: string; digest?: string }>;
  /** sha256 of every file under releases/contracts/, by path relative to it. */
  contracts: Record<string, string>;
  /** Every release, oldest first: what it released, from which commit. */
  history: { date: string; commit: string; released: Record<string, string>; api?: string }[];
}

export const readRecord = (): ReleaseRecord => JSON.parse(readFileSync(RECORD, 'utf8')) as ReleaseRecord;
export const writeRecord = (r: ReleaseRecord) => writeFileSync(RECORD, `${JSON.stringify(r, null, 2)}\n`);

export interface Manifest {
  processes: { name: string; package: string; workspace: string; chart: string; protocol: string }[];
}
export const manifest = (): Manifest =>
  JSON.parse(readFileSync(path.join(ROOT, 'services/manifest.json'), 'utf8')) as Manifest;
export const packageVersion = (workspace: string, root = ROOT): string =>
  (JSON.parse(readFileSync(path.join(root, workspace, 'package.json'), 'utf8')) as { version: string }).version;
export const chartMeta = (chart: string, charts = path.join(ROOT, 'charts')) =>
  parseYaml(readFileSync(path.join(charts, chart, 'Chart.yaml'), 'utf8')) as {
    version: string;
    appVersion?: string;
    dependencies?: { name: string; version: string }[];
  };

/**
 * The version each package will have at its next release, from the pending changesets
 * (`changeset status`): a breaking change to a chart's values is judged against the major it will
 * ship in, so the change and its changeset land together, before `make release`.
 */
export function pendingVersions(): Record<string, string> {
  const out = path.join(mkdtempSync(path.join(tmpdir(), 'changesets-')), 'status.json');
  execFileSync(path.join(ROOT, 'node_modules/.bin/changeset'), ['status', '--output', out], {
    cwd: ROOT,
    stdio: 'ignore',
  });
  const status = JSON.parse(readFileSync(out, 'utf8')) as { releases: { name: string; newVersion: string }[] };
  rmSync(path.dirname(out), { recursive: true, force: true });
  return Object.fromEntries(status.releases.map((r) => [r.name, r.newVersion]));
}

const sha256 = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
const filesUnder = (dir: string): string[] =>
  readdirSync(dir).flatMap((f) =>
    statSync(path.join(dir, f)).isDirectory() ? filesUnder(path.join(dir, f)).map((g) => `${f}/${g}`) : [f],
  );

// ------------------------------------------------------------------------------------ snapshots

/** The buf image of proto/ (descriptors only), indented so a release's diff can be read. */
export function protoImage(out: string, protoDir = path.join(ROOT, 'proto')): void {
  const tmp = path.join(mkdtempSync(path.join(tmpdir(), 'proto-image-')), 'image.json');
  execFileSync(BUF, ['build', protoDir, '--exclude-source-info', '-o', tmp], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  writeFileSync(out, `${JSON.stringify(JSON.parse(readFileSync(tmp, 'utf8')), null, 1)}\n`);
  rmSync(path.dirname(tmp), { recursive: true, force: true });
}

/**
 * Writes the contracts of what is being released into releases/contracts/ (the proto image always:
 * every service reads it; the document when the gateway is released; the values schema of each
 * released chart) and answers the sha256 of every file there.
 */
export async function snapshotContracts(opts: { api: boolean; charts: string[] }): Promise<Record<string, string>> {
  mkdirSync(CONTRACTS, { recursive: true });
  protoImage(path.join(CONTRACTS, 'proto.json'));
  if (opts.api)
    writeFileSync(path.join(CONTRACTS, 'openapi.json'), `${JSON.stringify(await servedDocument(), null, 2)}\n`);
  for (const c of opts.charts) {
    mkdirSync(path.join(CONTRACTS, 'charts', c), { recursive: true });
    cpSync(path.join(ROOT, 'charts', c, 'values.schema.json'), path.join(CONTRACTS, 'charts', c, 'values.schema.json'));
  }
  return Object.fromEntries(
    filesUnder(CONTRACTS)
      .sort()
      .map((f) => [f, sha256(path.join(CONTRACTS, f))]),
  );
}

// ------------------------------------------------------------------------------------ checks

/** Scratch folders of this run (canaries, rewritten schemas), removed when it ends. */
const scratches: string[] = [];
const scratch = () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'contracts-canary-'));
  scratches.push(dir);
  return dir;
};
process.on('exit', () => scratches.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** What a check found: `problems` refuse the change; `notes` are said and allowed. */
export interface Verdict {
  problems: string[];
  notes: string[];
}

/** The snapshot is what the record says was released (a hand edit of it would silently loosen every check). */
export function recordCheck(dir = CONTRACTS, record = readRecord()): Verdict {
  const problems: string[] = [];
  const present = new Set(filesUnder(dir));
  for (const [f, want] of Object.entries(record.contracts)) {
    if (!present.has(f)) problems.push(`releases/contracts/${f}: recorded but missing`);
    else if (sha256(path.join(dir, f)) !== want)
      problems.push(`releases/contracts/${f}: differs from the release recorded (sha256 ${want.slice(0, 12)}…)`);
  }
  for (const f of present)
    if (!(f in record.contracts)) problems.push(`releases/contracts/${f}: not part of any recorded release`);
  return { problems, notes: [`${Object.keys(record.contracts).length} contract files as recorded`] };
}

/**
 * releases/ is as `make release` last left it: unchanged since the commit that recorded the last
 * release (contracts and record edited together by hand would pass `recordCheck`). Needs the
 * repository's history; without it, said and skipped.
 */
export function releasedUntouched(repo = ROOT): Verdict {
  const git = (...args: string[]) => spawnSync('git', ['-C', repo, ...args], { encoding: 'utf8' });
  const recorded = git('log', '-1', '--format=%H', '--', 'releases/record.json').stdout.trim();
  if (!recorded) return { problems: [], notes: ['skipped: no git history of releases/record.json here'] };
  const changed = git('diff', '--name-only', recorded, '--', 'releases').stdout.trim();
  const untracked = git('ls-files', '--others', '--exclude-standard', '--', 'releases').stdout.trim();
  const files = [...changed.split('\n'), ...untracked.split('\n')].filter(Boolean);
  return {
    problems: files.map(
      (f) =>
        `${f}: changed since the release was recorded (${recorded.slice(0, 12)}); only make release writes releases/`,
    ),
    notes: [`unchanged since ${recorded.slice(0, 12)}`],
  };
}

/** Each deployable's version is its package.json's; its chart carries it as version and appVersion; the umbrella pins it. */
export function versionsCheck(charts = path.join(ROOT, 'charts'), record = readRecord()): Verdict {
  const problems: string[] = [];
  const pins = new Map((chartMeta('platform', charts).dependencies ?? []).map((d) => [d.name, d.version]));
  for (const p of manifest().processes) {
    const version = packageVersion(p.workspace);
    const chart = chartMeta(p.chart, charts);
    // Versions move only with a release: a hand bump would name a build nobody released.
    const released = record.services[p.name]?.version;
    if (released && released !== version)
      problems.push(
        `${p.workspace}/package.json is ${version}, but ${p.name} was last released as ${released} (versions move with make release)`,
      );
    if (chart.version !== version)
      problems.push(
        `charts/${p.chart}: version ${chart.version}, but ${p.workspace}/package.json is ${version} (make release sets both)`,
      );
    if (chart.appVersion !== version)
      problems.push(`charts/${p.chart}: appVersion ${chart.appVersion}, but ${p.workspace}/package.json is ${version}`);
    if (pins.get(p.chart) !== chart.version)
      problems.push(`charts/platform pins ${p.chart} ${pins.get(p.chart)}, but the chart is ${chart.version}`);
  }
  return { problems, notes: [] };
}

interface BufFinding {
  path: string;
  start_line: number;
  type: string;
  message: string;
}

/** RPCs the released image marks deprecated, as `Service.Method`: their callers stopped calling them. */
function retiredRpcs(image: string): Set<string> {
  const files = (
    JSON.parse(readFileSync(image, 'utf8')) as {
      file: { service?: { name: string; method?: { name: string; options?: { deprecated?: boolean } }[] }[] }[];
    }
  ).file;
  return new Set(
    files.flatMap((f) =>
      (f.service ?? []).flatMap((s) =>
        (s.method ?? []).filter((m) => m.options?.deprecated).map((m) => `${s.name}.${m.name}`),
      ),
    ),
  );
}

export function protoCheck(protoDir = path.join(ROOT, 'proto'), image = path.join(CONTRACTS, 'proto.json')): Verdict {
  const r = spawnSync(BUF, ['breaking', protoDir, '--against', image, '--error-format', 'json'], { encoding: 'utf8' });
  if (r.status !== 0 && r.status !== 100) throw new Error(`buf breaking failed to run (${r.status}): ${r.stderr}`);
  const retired = retiredRpcs(image);
  const verdict: Verdict = { problems: [], notes: [] };
  for (const line of r.stdout.split('\n').filter(Boolean)) {
    const f = JSON.parse(line) as BufFinding;
    const rpc = /RPC "(\w+)" on service "(\w+)" was deleted/.exec(f.message);
    const text = `${f.path}:${f.start_line}: ${f.type}: ${f.message}`;
    if (f.type === 'RPC_NO_DELETE' && rpc && retired.has(`${rpc[2]}.${rpc[1]}`))
      verdict.notes.push(`${text} (allowed: released as deprecated)`);
    else verdict.problems.push(text);
  }
  return verdict;
}

type Doc = Record<string, any>;

/**
 * The document as oasdiff should judge it: each webhook payload as the response of an operation
 * `GET /webhooks/<event>` (oasdiff reads a webhook's body as a request, where a removed field is
 * harmless; tenants' servers read it as a response), and, where the released document says an enum
 * may grow (`x-enum-may-grow`), no enum on either side, so a new value passes.
 */
export function judgedAsTenantsRead(released: Doc, current: Doc): [Doc, Doc] {
  const webhooksAsResponses = (doc: Doc): Doc => {
    const d = structuredClone(doc);
    for (const [event, item] of Object.entries((d.webhooks ?? {}) as Record<string, Record<string, Doc>>)) {
      for (const op of Object.values(item)) {
        d.paths[`/webhooks/${event}`] = {
          get: {
            operationId: `webhook:${event}`,
            summary: op.summary,
            ...(op.deprecated && { deprecated: true, 'x-sunset': op['x-sunset'] }),
            responses: { '200': { description: 'The payload POSTed to the tenant', content: op.requestBody?.content } },
          },
        };
      }
    }
    delete d.webhooks;
    return d;
  };
  const base = webhooksAsResponses(released);
  const rev = webhooksAsResponses(current);
  const open = (b: unknown, r: unknown): void => {
    if (!b || typeof b !== 'object') return;
    const bo = b as Doc;
    const ro = r && typeof r === 'object' ? (r as Doc) : undefined;
    if (bo['x-enum-may-grow'] === true) {
      delete bo.enum;
      if (ro) delete ro.enum;
    }
    for (const k of Object.keys(bo)) open(bo[k], ro?.[k]);
  };
  open(base, rev);
  return [base, rev];
}

interface OasdiffFinding {
  id: string;
  text: string;
  level: number;
  operation: string;
  path: string;
}

/** The schema node a finding's `a/b/c` property path names, in the released document's answer. */
function releasedProperty(doc: Doc, f: OasdiffFinding, propertyPath: string): Doc | undefined {
  const deref = (s: Doc | undefined): Doc | undefined =>
    s?.$ref
      ? deref(
          s.$ref
            .split('/')
            .slice(1)
            .reduce((o: Doc, k: string) => o?.[k], doc),
        )
      : s;
  const status = /`(\d{3})` status/.exec(f.text)?.[1] ?? '200';
  let node = deref(
    doc.paths?.[f.path]?.[f.operation.toLowerCase()]?.responses?.[status]?.content?.['application/json']?.schema,
  );
  for (const seg of propertyPath.split('/'))
    node = deref(seg === 'items' && node?.items ? node.items : node?.properties?.[seg]);
  return node;
}

const LEVELS: Record<number, string> = { 3: 'error', 2: 'warning', 1: 'info' };

export function apiCheck(released: Doc, current: Doc, today = new Date().toISOString().slice(0, 10)): Verdict {
  const [base, rev] = judgedAsTenantsRead(released, current);
  const dir = mkdtempSync(path.join(tmpdir(), 'api-check-'));
  try {
    writeFileSync(path.join(dir, 'released.json'), JSON.stringify(base));
    writeFileSync(path.join(dir, 'current.json'), JSON.stringify(rev));
    const oasdiff = execFileSync('bash', [path.join(ROOT, 'scripts/oasdiff.sh')], { encoding: 'utf8' }).trim();
    const r = spawnSync(
      oasdiff,
      // Stricter than oasdiff's defaults where the product's rules are (tools/oasdiff-levels.txt says which);
      // a newly deprecated operation must give at least 90 days (the spec's promise).
      [
        'breaking',
        'released.json',
        'current.json',
        '--format',
        'json',
        '--severity-levels',
        path.join(__dirname, 'oasdiff-levels.txt'),
        '--deprecation-days-stable',
        '90',
      ],
      { cwd: dir, encoding: 'utf8' },
    );
    if (r.status !== 0) throw new Error(`oasdiff failed to run (${r.status}): ${r.stderr}`);
    const verdict: Verdict = { problems: [], notes: [] };
    for (const f of (JSON.parse(r.stdout || '[]') ?? []) as OasdiffFinding[]) {
      const text = `${f.operation} ${f.path}: ${f.id}: ${f.text}`;
      // oasdiff has no "removed after deprecation" for an optional response field: the released
      // field's own deprecation and sunset decide, as for the operations oasdiff does judge.
      const removed =
        f.id === 'response-optional-property-removed' ? /property `([^`]+)`/.exec(f.text)?.[1] : undefined;
      const field = removed ? releasedProperty(base, f, removed) : undefined;
      if (field?.deprecated && typeof field['x-sunset'] === 'string' && field['x-sunset'] <= today)
        verdict.notes.push(`${text} (allowed: deprecated, sunset ${field['x-sunset']} passed)`);
      else if (f.level >= 3) verdict.problems.push(text);
      else if (f.level === 2) verdict.notes.push(`${LEVELS[f.level]}: ${text}`);
    }
    return verdict;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * Every chart released: its values schema now against the released one (scripts/values-compat.py),
 * with the common definitions as `charts-check --sync-schemas` would copy them in (a change made
 * only in charts/common/schema/service-defs.json is judged too).
 */
export function valuesCheck(
  charts = path.join(ROOT, 'charts'),
  record = readRecord(),
  only?: string[],
  pending: Record<string, string> = {},
): Verdict {
  const verdict: Verdict = { problems: [], notes: [] };
  const definitions = (JSON.parse(readFileSync(path.join(charts, 'common/schema/service-defs.json'), 'utf8')) as Doc)
    .definitions as Doc;
  const dir = scratch();
  const packages = Object.fromEntries(
    manifest().processes.map((p) => [
      p.chart,
      (JSON.parse(readFileSync(path.join(ROOT, p.workspace, 'package.json'), 'utf8')) as { name: string }).name,
    ]),
  );
  for (const chart of [...manifest().processes.map((p) => p.chart), 'platform']) {
    if (only && !only.includes(chart)) continue;
    const version = record.charts[chart]?.version;
    if (!version) {
      verdict.problems.push(
        `charts/${chart}: no released values schema in releases/record.json (a chart not yet released is released with its first changeset)`,
      );
      continue;
    }
    const schema = JSON.parse(readFileSync(path.join(charts, chart, 'values.schema.json'), 'utf8')) as Doc;
    if (schema.definitions) schema.definitions = definitions;
    const current = path.join(dir, `${chart}.values.schema.json`);
    writeFileSync(current, JSON.stringify(schema));
    const r = spawnSync(
      'python3',
      [
        path.join(ROOT, 'scripts/values-compat.py'),
        path.join(CONTRACTS, 'charts', chart, 'values.schema.json'),
        current,
        version,
        pending[packages[chart] ?? ''] ?? chartMeta(chart, charts).version,
        '--chart',
        chart,
      ],
      {
        encoding: 'utf8',
      },
    );
    const lines = r.stdout.split('\n').filter(Boolean);
    if (r.status === 0) verdict.notes.push(lines[lines.length - 1] ?? `charts/${chart}: ok`);
    else verdict.problems.push(...(lines.length ? lines : [`charts/${chart}: values-compat failed: ${r.stderr}`]));
  }
  return verdict;
}

// ------------------------------------------------------------------------------------ canaries

/** proto/ with one field's number reused by another field (a consumer of the old would misread it). */
function protoWithReusedNumber(): string {
  const dir = scratch();
  cpSync(path.join(ROOT, 'proto'), dir, { recursive: true, filter: (src) => !src.includes(`${path.sep}gen`) });
  const file = path.join(dir, 'voiceapi/events/v1/billing.proto');
  const text = readFileSync(file, 'utf8');
  if (!text.includes('int64 credits_charged = 5;'))
    throw new Error('canary: CallBilled.credits_charged = 5 is gone; pick another field');
  writeFileSync(file, text.replace('int64 credits_charged = 5;', 'string charge_note = 5;'));
  return dir;
}

/** proto/ with an RPC deleted, and the released image with that RPC marked deprecated or not. */
function protoWithoutRpc(deprecatedInRelease: boolean): { dir: string; image: string } {
  const dir = scratch();
  cpSync(path.join(ROOT, 'proto'), dir, { recursive: true, filter: (src) => !src.includes(`${path.sep}gen`) });
  const file = path.join(dir, 'voiceapi/companies/v1/companies.proto');
  const text = readFileSync(file, 'utf8');
  const rpc = /^\s*rpc (\w+)\(.*\) returns \(.*\);\n/m.exec(text);
  if (!rpc) throw new Error('canary: no rpc in companies.proto');
  writeFileSync(file, text.replace(rpc[0], ''));
  const image = path.join(dir, 'released.json');
  const img = JSON.parse(readFileSync(path.join(CONTRACTS, 'proto.json'), 'utf8')) as Doc;
  if (deprecatedInRelease) {
    for (const f of img.file)
      for (const s of f.service ?? [])
        for (const m of s.method ?? []) if (m.name === rpc[1]) m.options = { ...m.options, deprecated: true };
  }
  writeFileSync(image, JSON.stringify(img));
  return { dir, image };
}

/** charts/ with a key removed from the common `service` definition (every service chart's values). */
function chartsWithout(key: string): string {
  const dir = scratch();
  cpSync(path.join(ROOT, 'charts'), dir, { recursive: true });
  const file = path.join(dir, 'common/schema/service-defs.json');
  const schema = JSON.parse(readFileSync(file, 'utf8')) as Doc;
  const service = schema.definitions?.service?.properties as Doc | undefined;
  if (!service?.[key]) throw new Error(`canary: the common service values have no ${key}; pick another key`);
  delete service[key];
  writeFileSync(file, JSON.stringify(schema));
  return dir;
}

const withoutKey = (o: Doc, key: string) => {
  delete o.properties[key];
  o.required = (o.required as string[] | undefined)?.filter((k) => k !== key);
};

interface Canary {
  name: string;
  /** A verdict with problems matching `expect` (must fail), or none (a control that must pass). */
  run: () => Verdict | Promise<Verdict>;
  expect?: RegExp;
}

export function canaries(current: Doc): Canary[] {
  const released = JSON.parse(readFileSync(path.join(CONTRACTS, 'openapi.json'), 'utf8')) as Doc;
  const past = '2026-01-01';
  const someOp = Object.keys(current.paths).find((p) => p.endsWith('/omni/templates'))!;
  return [
    {
      name: 'protobuf: a field number reused with another name and type',
      run: () => protoCheck(protoWithReusedNumber()),
      expect: /CallBilled.*(changed type|changed name)/,
    },
    {
      name: 'protobuf: an RPC deleted while released callers may call it',
      run: () => ((c) => protoCheck(c.dir, c.image))(protoWithoutRpc(false)),
      expect: /RPC_NO_DELETE/,
    },
    {
      name: 'protobuf: an RPC released as deprecated may go (control)',
      run: () => ((c) => protoCheck(c.dir, c.image))(protoWithoutRpc(true)),
    },
    {
      name: 'tenant API: a required response field removed',
      run: () =>
        apiCheck(
          released,
          ((d) => (withoutKey(d.components.schemas.CreditBalance, 'held'), d))(structuredClone(current)),
        ),
      expect: /GET \/api\/v1\/credits: response-required-property-removed/,
    },
    {
      name: 'tenant API: a webhook payload field removed (judged as a response)',
      run: () =>
        apiCheck(
          released,
          ((d) => (withoutKey(d.components.schemas.CallOutboundBilledEvent.properties.data, 'creditsCharged'), d))(
            structuredClone(current),
          ),
        ),
      expect: /\/webhooks\/call\.outbound\.billed: response-required-property-removed.*creditsCharged/,
    },
    {
      name: 'tenant API: a query parameter made required',
      run: () =>
        apiCheck(
          released,
          ((d) => {
            for (const p of d.paths['/api/v1/calls'].get.parameters) if (p.name === 'campaignId') p.required = true;
            return d;
          })(structuredClone(current)),
        ),
      expect: /request-parameter-became-required/,
    },
    {
      name: 'tenant API: an operation removed without deprecation',
      run: () => apiCheck(released, ((d) => (delete d.paths[someOp], d))(structuredClone(current))),
      expect: /api-path-removed-without-deprecation/,
    },
    {
      name: 'tenant API: an operation released deprecated is removed before its sunset',
      run: () =>
        apiCheck(
          ((d) => Object.assign(d.paths[someOp].get, { deprecated: true, 'x-sunset': '2099-01-01' }) && d)(
            structuredClone(released),
          ),
          ((d) => (delete d.paths[someOp], d))(structuredClone(current)),
        ),
      expect: /api-path-removed-before-sunset/,
    },
    {
      name: 'tenant API: an operation released deprecated is removed after its sunset (control)',
      run: () =>
        apiCheck(
          ((d) => Object.assign(d.paths[someOp].get, { deprecated: true, 'x-sunset': past }) && d)(
            structuredClone(released),
          ),
          ((d) => (delete d.paths[someOp], d))(structuredClone(current)),
        ),
    },
    {
      name: 'tenant API: an optional response field removed without deprecation',
      run: () => {
        const base = structuredClone(released);
        base.components.schemas.CreditBalance.properties.promo = { type: 'string' };
        return apiCheck(base, current);
      },
      expect: /response-optional-property-removed.*promo/,
    },
    {
      name: 'tenant API: an optional response field released deprecated is removed after its sunset (control)',
      run: () => {
        const base = structuredClone(released);
        base.components.schemas.CreditBalance.properties.promo = { type: 'string', deprecated: true, 'x-sunset': past };
        return apiCheck(base, current);
      },
    },
    {
      name: 'tenant API: a value added to a response enum the reference does not say may grow',
      run: () =>
        apiCheck(
          released,
          ((d) => (d.components.schemas.CallSummary.properties.direction.enum.push('transfer'), d))(
            structuredClone(current),
          ),
        ),
      expect: /response-property-enum-value-added.*transfer/,
    },
    {
      name: 'tenant API: a value added to a response enum that may grow (control)',
      run: () =>
        apiCheck(
          released,
          ((d) => (d.components.schemas.CallSummary.properties.outcome.enum.push('transferred'), d))(
            structuredClone(current),
          ),
        ),
    },
    {
      name: 'tenant API: an operation newly deprecated with a sunset less than 90 days away',
      run: () =>
        apiCheck(
          released,
          ((d) =>
            Object.assign(d.paths[someOp].get, {
              deprecated: true,
              'x-sunset': new Date(Date.now() + 30 * 86_400_000).toISOString().slice(0, 10),
            }) && d)(structuredClone(current)),
        ),
      expect: /sunset/,
    },
    {
      name: 'chart values: a key a released values file could set is removed',
      run: () => valuesCheck(chartsWithout('replicaCount'), readRecord(), ['leads']),
      expect: /replicaCount removed/,
    },
    {
      name: 'chart values: the same removal with a pending major changeset for the service (control)',
      run: () => valuesCheck(chartsWithout('replicaCount'), readRecord(), ['leads'], { '@voiceapi/leads': '2.0.0' }),
    },
    {
      name: 'the record: contracts and their hashes edited together by hand',
      run: () => {
        const dir = scratch();
        const g = (...args: string[]) =>
          execFileSync(
            'git',
            [
              '-C',
              dir,
              '-c',
              'user.name=canary',
              '-c',
              'user.email=canary@invalid',
              '-c',
              'commit.gpgsign=false',
              ...args,
            ],
            { stdio: 'ignore' },
          );
        cpSync(RELEASES, path.join(dir, 'releases'), { recursive: true });
        g('init', '-q');
        g('add', '-A');
        g('commit', '-qm', 'record');
        writeFileSync(path.join(dir, 'releases/contracts/openapi.json'), '{}\n');
        return releasedUntouched(dir);
      },
      expect: /releases\/contracts\/openapi\.json: changed since the release was recorded/,
    },
    {
      name: 'the record: a contract file edited after its release',
      run: () => {
        const dir = scratch();
        cpSync(CONTRACTS, dir, { recursive: true });
        writeFileSync(path.join(dir, 'openapi.json'), '{}\n');
        return recordCheck(dir);
      },
      expect: /openapi\.json: differs from the release recorded/,
    },
    ...shippedCanaries(),
  ];
}

/**
 * This tree as if nothing had changed since any release but the planted files (and, when given, the
 * lock file as the releases had it): the shipped check judged on one planted change at a time.
 */
function plantedTree(files: string[], releasedLock?: (lock: string) => string): Tree {
  const real = gitTree(ROOT);
  return {
    root: ROOT,
    has: () => true,
    changed: (_commit, paths) => files.filter((f) => paths.some((p) => f === p || f.startsWith(`${p}/`))),
    read: (file, commit) => {
      const now = real.read(file);
      return commit !== undefined && file === 'package-lock.json' && releasedLock && now ? releasedLock(now) : now;
    },
  };
}

function shippedCanaries(): Canary[] {
  const deployables = manifest().processes;
  const every = Object.fromEntries(deployables.map((d) => [d.package, '9.9.9']));
  const judge = (tree: Tree, pending: Record<string, string> = {}) =>
    unreleasedCheck(tree, deployables, readRecord(), pending);
  return [
    {
      name: 'shipped: a kit source file changed with no changeset for its dependents',
      run: () => judge(plantedTree(['libs/kit/src/worker.ts'])),
      expect: /companies .*no pending changeset for @voiceapi\/companies: libs\/kit\/src\/worker\.ts/,
    },
    {
      name: 'shipped: the same kit change with a pending changeset for every dependent (control)',
      run: () => judge(plantedTree(['libs/kit/src/worker.ts']), every),
    },
    {
      name: 'shipped: generated contracts changed (proto/gen) with no changeset',
      run: () => judge(plantedTree(['proto/gen/src/voiceapi/leads/v1/leads.ts'])),
      expect: /no pending changeset for @voiceapi\/gateway: proto\/gen\//,
    },
    {
      name: "shipped: a production dependency resolved to another version than the release's",
      run: () =>
        judge(
          plantedTree([], (lock) =>
            lock.replace(/("node_modules\/mongoose": \{\s*"version": ")([^"]+)/, (_m, a: string) => `${a}0.0.1`),
          ),
        ),
      expect: /package-lock\.json: .*resolved differently \(node_modules\/mongoose/,
    },
    {
      name: "shipped: a service's chart template changed with no changeset",
      run: () => judge(plantedTree(['charts/billing/templates/resources.yaml'])),
      expect: /billing .*no pending changeset for @voiceapi\/billing: charts\/billing\/templates/,
    },
    {
      name: 'shipped: the umbrella chart changed with no changeset at all',
      run: () => judge(plantedTree(['charts/platform/files/prometheus/slos.rules.yaml'])),
      expect: /charts\/platform: 1 change/,
    },
    {
      name: 'shipped: a test, a README and a changelog changed (control: none ships)',
      run: () =>
        judge(
          plantedTree([
            'libs/kit/src/worker.test.ts',
            'services/leads/test/fixtures.ts',
            'libs/kit/README.md',
            'services/leads/CHANGELOG.md',
          ]),
        ),
    },
  ];
}

// ------------------------------------------------------------------------------------ main

async function main(): Promise<void> {
  if (!existsSync(RECORD))
    throw new Error('no release recorded (releases/record.json): `make release` records the first');
  const current = await servedDocument();
  const released = JSON.parse(readFileSync(path.join(CONTRACTS, 'openapi.json'), 'utf8')) as Doc;
  const checks: [string, () => Verdict][] = [
    ['the record: releases/contracts/ is what was released', () => recordCheck()],
    ['the record: releases/ untouched since make release wrote it', () => releasedUntouched()],
    [
      'versions: each deployable one version (package.json = chart version = appVersion = umbrella pin)',
      () => versionsCheck(),
    ],
    [
      'shipped: a deployable whose image or chart content changed since its release has a pending changeset',
      () => unreleasedCheck(gitTree(ROOT), manifest().processes, readRecord(), pendingVersions()),
    ],
    ['protobuf (gRPC and Kafka events): buf breaking against the released image', () => protoCheck()],
    ['tenant API: the served document against the released one (oasdiff)', () => apiCheck(released, current)],
    [
      'chart values: released keys still accepted (or the pending changeset makes it a major)',
      () => valuesCheck(undefined, undefined, undefined, pendingVersions()),
    ],
  ];
  const record = readRecord();
  console.log(
    `last release: ${record.history.at(-1)?.date} (${record.history.at(-1)?.commit.slice(0, 12)}); /api/v1 ${record.api.version}`,
  );
  let failed = 0;
  for (const [name, check] of checks) {
    const v = check();
    console.log(`${v.problems.length ? 'FAIL' : 'PASS'}  ${name}`);
    for (const n of v.notes) console.log(`        ${n}`);
    for (const p of v.problems) console.log(`        ${p}`);
    failed += v.problems.length ? 1 : 0;
  }
  console.log('\ncanaries: each planted break must be refused, naming what broke; each control must pass');
  for (const c of canaries(current)) {
    const v = await c.run();
    const ok = c.expect ? v.problems.some((p) => c.expect!.test(p)) : v.problems.length === 0;
    console.log(`${ok ? 'PASS' : 'FAIL'}  ${c.expect ? 'refused' : 'allowed'}: ${c.name}`);
    for (const p of v.problems.slice(0, 3)) console.log(`        ${p}`);
    if (!ok) failed++;
  }
  if (failed) {
    console.log(
      `\n${failed} contract check(s) failed: see docs/operations.md, "Releases", for what the checks refuse and how to change a contract`,
    );
    process.exit(1);
  }
  console.log('\nevery contract is compatible with the last release');
}

if (require.main === module) {
  // `snapshot api|no-api <chart>...`: make release's step 4, in a process that loads today's routes.
  const [cmd, api, ...charts] = process.argv.slice(2);
  if (cmd === 'changeset-shipped') {
    // `make changeset-shipped SUMMARY="…"`: a patch changeset for every deployable that ships a change without one.
    const file = writeShippedChangeset(gitTree(ROOT), manifest().processes, readRecord(), pendingVersions(), api ?? '');
    console.log(
      file ? `wrote ${file}: edit its summary if it says too little` : 'every shipped change has a changeset',
    );
    process.exit(0);
  }
  (cmd === 'snapshot'
    ? snapshotContracts({ api: api === 'api', charts }).then((h) => console.log(JSON.stringify(h)))
    : main()
  ).catch((err: unknown) => {
    console.error(err);
    process.exit(2);
  });
}
