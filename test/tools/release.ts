/**
 * `make release` (after `make contracts-check` passed): records a release of the deployables named
 * by the pending changesets (.changeset/*.md, written with `npx changeset`), in two commits.
 *
 * 1. `changeset version`: each named deployable's package.json version moves (semver, by the
 *    largest bump its changesets ask for) and its CHANGELOG.md gets their summaries;
 * 2. its chart's version and appVersion become that version (its image tag follows appVersion),
 *    the umbrella pins it and moves by the same kind of bump; helm rebuilds the umbrella's lock;
 * 3. with the gateway: if the served document changed, `/api/v1` moves (minor when oasdiff's
 *    changelog lists changes, patch for wording) and the tenants' changelog gets oasdiff's lines;
 * 4. the contracts as released go to releases/contracts/ (contracts.ts `snapshotContracts`);
 * 5. commit "Release …" (the release commit: what is built and shipped), then releases/record.json
 *    names it, in a commit of its own, with a tag `<name>@<version>` per deployable.
 *
 * RELEASE_DATE (YYYY-MM-DD, default today, UTC) dates the record and the changelogs.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseDocument } from 'yaml';
import {
  CONTRACTS,
  judgedAsTenantsRead,
  manifest,
  packageVersion,
  pendingVersions,
  readRecord,
  ROOT,
  writeRecord,
  type ReleaseRecord,
} from './contracts';
import { servedDocument } from './served-document';

const run = (cmd: string, args: string[], opts: { quiet?: boolean } = {}) =>
  execFileSync(cmd, args, {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', opts.quiet ? 'pipe' : 'inherit'],
  }).trim();
const git = (...args: string[]) =>
  run('git', ['-c', 'user.name=voiceapi release', '-c', 'user.email=release@voiceapi.invalid', ...args]);
const say = (s: string) => process.stdout.write(`[release] ${s}\n`);

type Bump = 'major' | 'minor' | 'patch';
const bumpOf = (from: string, to: string): Bump => {
  const [a, b] = [from, to].map((v) => v.split('.').map(Number)) as [number[], number[]];
  return a[0] !== b[0] ? 'major' : a[1] !== b[1] ? 'minor' : 'patch';
};
const bump = (v: string, kind: Bump) => {
  const [ma, mi, pa] = v.split('.').map(Number) as [number, number, number];
  return kind === 'major' ? `${ma + 1}.0.0` : kind === 'minor' ? `${ma}.${mi + 1}.0` : `${ma}.${mi}.${pa + 1}`;
};
const BUMPS: Bump[] = ['patch', 'minor', 'major'];

/** Sets top-level keys of a Chart.yaml, keeping its comments. */
function setChart(chart: string, set: (doc: ReturnType<typeof parseDocument>) => void): void {
  const file = path.join(ROOT, 'charts', chart, 'Chart.yaml');
  const doc = parseDocument(readFileSync(file, 'utf8'));
  set(doc);
  writeFileSync(file, doc.toString({ lineWidth: 0 }));
}

/**
 * Whether a chart's content moved since a commit: any file but Chart.yaml byte for byte, Chart.yaml
 * by what it says (helm packages it re-serialised, so its comments do not ship).
 */
function chartChanged(chart: string, since: string): boolean {
  return git('diff', '--name-only', since, 'HEAD', '--', `charts/${chart}`)
    .split('\n')
    .filter(Boolean)
    .some(
      (f) =>
        !f.endsWith('/Chart.yaml') ||
        JSON.stringify(parseDocument(git('show', `${since}:${f}`)).toJS()) !==
          JSON.stringify(parseDocument(readFileSync(path.join(ROOT, f), 'utf8')).toJS()),
    );
}

const API_RELEASE = path.join(ROOT, 'gateway/src/api-release.json');

/** What tenants use instead of each operation deprecated since the last release (the route's `deprecated.use`). */
function newlyDeprecated(released: Record<string, any>, current: Record<string, any>): string[] {
  const lines: string[] = [];
  for (const [p, item] of Object.entries(current.paths as Record<string, Record<string, any>>)) {
    for (const [method, op] of Object.entries(item)) {
      if (!op?.deprecated || released.paths?.[p]?.[method]?.deprecated) continue;
      lines.push(
        `\`${method.toUpperCase()} ${p}\` is deprecated and may be removed after ${op['x-sunset']}: use ${op['x-use-instead']} instead.`,
      );
    }
  }
  return lines;
}

/** The tenants' changelog entry: oasdiff's changelog of the released document to today's. */
function apiChanges(released: object, current: object): string[] {
  const [base, rev] = judgedAsTenantsRead(released, current);
  const dir = run('mktemp', ['-d']);
  writeFileSync(path.join(dir, 'base.json'), JSON.stringify(base));
  writeFileSync(path.join(dir, 'rev.json'), JSON.stringify(rev));
  const oasdiff = run('bash', ['scripts/oasdiff.sh'], { quiet: true });
  const out = run(oasdiff, [
    'changelog',
    path.join(dir, 'base.json'),
    path.join(dir, 'rev.json'),
    '--format',
    'json',
    '--level',
    'INFO',
  ]);
  run('rm', ['-rf', dir]);
  return ((JSON.parse(out || '[]') ?? []) as { operation: string; path: string; text: string }[]).map(
    (c) => `\`${c.operation} ${c.path.replace(/^\/webhooks\//, 'webhook ')}\`: ${c.text}`,
  );
}

async function main(): Promise<void> {
  const date = process.env.RELEASE_DATE ?? new Date().toISOString().slice(0, 10);
  if (git('status', '--porcelain'))
    throw new Error('the work tree has changes: commit them first (a release is built from a commit)');
  // The record names the release commit: it must stay in main's history (a rebase or squash would lose it).
  if (git('rev-parse', '--abbrev-ref', 'HEAD') !== 'main')
    throw new Error('release from main: the record names a commit of its history');
  const processes = manifest().processes;
  const before = Object.fromEntries(processes.map((p) => [p.name, packageVersion(p.workspace)]));
  const prior = existsSync(path.join(ROOT, 'releases/record.json')) ? readRecord() : undefined;
  // The umbrella vendors every chart as it is now: one changed since its release would ship under
  // its released version with other content.
  const pending = pendingVersions();
  for (const p of processes) {
    const name = (JSON.parse(readFileSync(path.join(ROOT, p.workspace, 'package.json'), 'utf8')) as { name: string })
      .name;
    const since = prior?.services[p.name]?.commit;
    if (!(name in pending) && since && chartChanged(p.chart, since)) {
      throw new Error(
        `charts/${p.chart} changed since ${p.name} ${before[p.name]} was released: release ${p.name} too (a changeset for it)`,
      );
    }
  }
  run('npx', ['--no-install', 'changeset', 'version']);
  // The lock file names each workspace's version too.
  run('npm', ['install', '--package-lock-only', '--no-audit', '--no-fund'], { quiet: true });
  const released = processes.filter((p) => packageVersion(p.workspace) !== before[p.name]);
  if (released.length === 0) throw new Error('no deployable to release: write a changeset first (`npx changeset`)');
  const record: ReleaseRecord = prior ?? {
    api: { version: '', date: '' },
    services: {},
    charts: {},
    contracts: {},
    history: [],
  };

  // 2. Charts follow their service; the umbrella pins them and moves as far as the largest bump.
  let umbrellaBump: Bump = 'patch';
  for (const p of released) {
    const version = packageVersion(p.workspace);
    const kind = bumpOf(before[p.name]!, version);
    if (BUMPS.indexOf(kind) > BUMPS.indexOf(umbrellaBump)) umbrellaBump = kind;
    setChart(p.chart, (d) => {
      d.set('version', version);
      d.set('appVersion', version);
    });
    setChart('platform', (d) => {
      const deps = d.get('dependencies') as { items: { get(k: string): unknown; set(k: string, v: unknown): void }[] };
      deps.items.find((i) => i.get('name') === p.chart)?.set('version', version);
    });
    say(`${p.name} ${before[p.name]} -> ${version}`);
  }
  const platformVersion =
    (parseDocument(readFileSync(path.join(ROOT, 'charts/platform/Chart.yaml'), 'utf8')).get('version') as string) ??
    '0.0.0';
  const umbrella = record.history.length === 0 ? '1.0.0' : bump(platformVersion, umbrellaBump);
  setChart('platform', (d) => {
    d.set('version', umbrella);
    d.set('appVersion', umbrella);
  });
  const helm = run('bash', ['scripts/helm.sh'], { quiet: true });
  run(helm, ['dependency', 'update', path.join(ROOT, 'charts/platform'), '--skip-refresh']);
  say(`charts/platform ${platformVersion} -> ${umbrella}`);

  // 3. The tenant API, with the gateway.
  const withGateway = released.some((p) => p.name === 'gateway');
  if (withGateway) {
    const api = JSON.parse(readFileSync(API_RELEASE, 'utf8')) as {
      version: string;
      changelog: { version: string; date: string; changes: string[] }[];
    };
    const first = record.history.length === 0;
    const previous = first
      ? undefined
      : (JSON.parse(readFileSync(path.join(CONTRACTS, 'openapi.json'), 'utf8')) as { info: unknown });
    const current = await servedDocument();
    const changes = previous
      ? [...apiChanges(previous, current), ...newlyDeprecated(previous, current)]
      : ['First release of `/api/v1`: every operation and webhook in this reference.'];
    const same =
      previous !== undefined && JSON.stringify(previous) === JSON.stringify({ ...current, info: previous.info });
    if (!same) {
      api.version = first ? '1.0.0' : bump(api.version, changes.length ? 'minor' : 'patch');
      api.changelog.unshift({
        version: api.version,
        date,
        changes: changes.length ? changes : ['Reference wording only: no operation, field or payload changed.'],
      });
      writeFileSync(API_RELEASE, `${JSON.stringify(api, null, 2)}\n`);
      say(`/api/v1 ${api.version}: ${changes.length} change(s) in the tenants' changelog`);
      record.api = { version: api.version, date };
      // The SDK carries the document as served (test/e2e/sdk.e2e.test.ts checks it), in a process
      // that loads the routes with the new version.
      run(process.execPath, ['--import', 'tsx', 'test/tools/sdk-generate.ts']);
    }
  }

  // 4. The contracts as released.
  const charts = [...released.map((p) => p.chart), 'platform'];
  // In a process of its own: this one loaded the gateway's routes before api-release.json moved.
  record.contracts = JSON.parse(
    run(process.execPath, [
      '--import',
      'tsx',
      'test/tools/contracts.ts',
      'snapshot',
      withGateway ? 'api' : 'no-api',
      ...charts,
    ]),
  ) as Record<string, string>;
  for (const c of charts)
    record.charts[c] = {
      version: parseDocument(readFileSync(path.join(ROOT, 'charts', c, 'Chart.yaml'), 'utf8')).get('version') as string,
    };

  // 5. The release commit, then the record naming it.
  const names = released.map((p) => `${p.name} ${packageVersion(p.workspace)}`).join(', ');
  git('add', '-A');
  git('commit', '-q', '-m', `Release ${date}: ${names}${withGateway ? `; /api/v1 ${record.api.version}` : ''}`);
  const commit = git('rev-parse', 'HEAD');
  for (const p of released) record.services[p.name] = { version: packageVersion(p.workspace), commit, date };
  record.history.push({
    date,
    commit,
    released: Object.fromEntries(released.map((p) => [p.name, packageVersion(p.workspace)])),
    ...(withGateway && { api: record.api.version }),
  });
  record['//'] = [
    'The releases of the platform (make release, test/tools/release.ts). services: each deployable as last released, built from `commit`;',
    'contracts: sha256 of releases/contracts/*, the contracts as last released, which make contracts-check compares today against.',
  ];
  writeRecord(record);
  git('add', 'releases/record.json');
  git('commit', '-q', '-m', `Record the release of ${date} (${commit.slice(0, 12)}): ${names}`);
  for (const p of released) git('tag', `${p.name}@${packageVersion(p.workspace)}`, commit);
  say(`released ${names} at ${commit.slice(0, 12)}; recorded in releases/record.json`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
