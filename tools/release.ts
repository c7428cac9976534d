/**
 * `make release` (after `make contracts-check` passed): records a release of the deployables named
 * by the pending changesets (.changeset/*.md, written with `npx changeset`), in two commits.
 *
 * 0. the tenants' notes (`Tenants:` paragraphs) are read from the changesets; the gateway, which
 *    serves the changelog they go into, is released with them (a patch changeset if none names it);
 * 1. `changeset version`: each named deployable's package.json version moves (semver, by the
 *    largest bump its changesets ask for) and its CHANGELOG.md gets their summaries;
 * 2. its chart's version and appVersion become that version (its image tag follows appVersion),
 *    the umbrella pins it and moves by the same kind of bump; helm rebuilds the umbrella's lock;
 * 3. with the gateway: if the served document changed or tenants' notes exist, `/api/v1` moves
 *    (minor when oasdiff's changelog lists changes, else patch) and the tenants' changelog gets
 *    oasdiff's lines and the notes;
 * 4. the contracts as released go to releases/contracts/ (contracts.ts `snapshotContracts`);
 * 5. commit "Release …" (the release commit: what is built and shipped); from its tree each released
 *    deployable's image is built (scripts/images.sh; its digest recorded) and each released chart
 *    and the umbrella packaged into releases/charts/ (with its sha256); then releases/record.json
 *    names them, in a commit of its own, with a tag `<name>@<version>` per deployable.
 * Any failure (an image that does not build) leaves main as it was: the release commit is undone.
 *
 * RELEASE_DATE (YYYY-MM-DD, default today, UTC) dates the record and the changelogs. RELEASE_IMAGES=0
 * builds no image (a dry run in a scratch clone only: the record then names none).
 */
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseDocument } from 'yaml';
import {
  manifest,
  packageVersion,
  pendingVersions,
  readRecord,
  ROOT,
  writeRecord,
  type ReleaseRecord,
} from './contracts';
import { buildImages, exportTree, packageCharts, tenantNotes, type BuiltImage } from './release-artifacts';
import { bump, run, say, tenantApi, type Bump } from './release-api';
import { chartChanges, gitTree } from './shipped';

const git = (...args: string[]) =>
  run('git', ['-c', 'user.name=voiceapi release', '-c', 'user.email=release@voiceapi.invalid', ...args]);
const bumpOf = (from: string, to: string): Bump => {
  const [a, b] = [from, to].map((v) => v.split('.').map(Number)) as [number[], number[]];
  return a[0] !== b[0] ? 'major' : a[1] !== b[1] ? 'minor' : 'patch';
};
const BUMPS: Bump[] = ['patch', 'minor', 'major'];

/** Sets top-level keys of a Chart.yaml, keeping its comments. */
function setChart(chart: string, set: (doc: ReturnType<typeof parseDocument>) => void): void {
  const file = path.join(ROOT, 'charts', chart, 'Chart.yaml');
  const doc = parseDocument(readFileSync(file, 'utf8'));
  set(doc);
  writeFileSync(file, doc.toString({ lineWidth: 0 }));
}

const packageName = (workspace: string) =>
  (JSON.parse(readFileSync(path.join(ROOT, workspace, 'package.json'), 'utf8')) as { name: string }).name;

async function main(): Promise<void> {
  const date = process.env.RELEASE_DATE ?? new Date().toISOString().slice(0, 10);
  if (git('status', '--porcelain'))
    throw new Error('the work tree has changes: commit them first (a release is built from a commit)');
  // The record names the release commit: it must stay in main's history (a rebase or squash would lose it).
  if (git('rev-parse', '--abbrev-ref', 'HEAD') !== 'main')
    throw new Error('release from main: the record names a commit of its history');
  // The tree was clean: whatever fails from here, main goes back to this commit and this tree.
  const start = git('rev-parse', 'HEAD');
  try {
    await release(date);
  } catch (err) {
    git('reset', '-q', '--hard', start);
    git('clean', '-fdq');
    say(`failed: main is back at ${start.slice(0, 12)}, nothing released`);
    throw err;
  }
}

async function release(date: string): Promise<void> {
  const processes = manifest().processes;
  const before = Object.fromEntries(processes.map((p) => [p.name, packageVersion(p.workspace)]));
  const prior = existsSync(path.join(ROOT, 'releases/record.json')) ? readRecord() : undefined;
  // The umbrella vendors every chart as it is now: one changed since its release would ship under
  // its released version with other content.
  const pending = pendingVersions();
  for (const p of processes) {
    const name = packageName(p.workspace);
    const since = prior?.services[p.name]?.commit;
    if (!(name in pending) && since && chartChanges(gitTree(ROOT), [`charts/${p.chart}`], since).length > 0) {
      throw new Error(
        `charts/${p.chart} changed since ${p.name} ${before[p.name]} was released: release ${p.name} too (a changeset for it)`,
      );
    }
  }
  // 0. The tenants' notes, before `changeset version` consumes their changesets. The gateway serves
  // the changelog (api-release.json is compiled into it): it is released with them.
  const notes = tenantNotes(ROOT);
  const gateway = packageName(processes.find((p) => p.name === 'gateway')!.workspace);
  if (notes.length && !(gateway in pending)) {
    writeFileSync(
      path.join(ROOT, `.changeset/release-${date}-tenant-notes.md`),
      `---\n"${gateway}": patch\n---\n\nServes the tenants' changelog with this release's notes for tenants (${notes
        .map((n) => `.changeset/${n.file}`)
        .join(', ')}).\n`,
      { flag: 'wx' },
    );
    say(`${notes.length} note(s) for tenants: the gateway, which serves their changelog, is released too (patch)`);
  }
  run('npx', ['--no-install', 'changeset', 'version']);
  // The lock file names each workspace's version too.
  run('npm', ['install', '--package-lock-only', '--no-audit', '--no-fund'], { quiet: true });
  const released = processes.filter((p) => packageVersion(p.workspace) !== before[p.name]);
  if (released.length === 0) throw new Error('no deployable to release: write a changeset first (`npx changeset`)');
  for (const p of released) {
    const tag = `${p.name}@${packageVersion(p.workspace)}`;
    if (git('tag', '--list', tag)) throw new Error(`tag ${tag} exists: that version was released already`);
  }
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
  if (withGateway) await tenantApi(record, date, notes);

  // 4. The contracts as released.
  const charts = [...released.map((p) => p.chart), 'platform'];
  // In a process of its own: this one loaded the gateway's routes before api-release.json moved.
  record.contracts = JSON.parse(
    run(process.execPath, [
      '--import',
      'tsx',
      'tools/contracts.ts',
      'snapshot',
      withGateway ? 'api' : 'no-api',
      ...charts,
    ]),
  ) as Record<string, string>;
  for (const c of charts)
    record.charts[c] = {
      version: parseDocument(readFileSync(path.join(ROOT, 'charts', c, 'Chart.yaml'), 'utf8')).get('version') as string,
    };

  // 5. The release commit; from its tree, the images and the chart packages; the record naming them.
  const names = released.map((p) => `${p.name} ${packageVersion(p.workspace)}`).join(', ');
  const withImages = process.env.RELEASE_IMAGES !== '0';
  git('add', '-A');
  git(
    'commit',
    '-q',
    '-m',
    `Release ${date}: ${names}${withGateway ? `; /api/v1 ${record.api.version}` : ''}${withImages ? '' : ' (dry run: RELEASE_IMAGES=0, no images)'}`,
  );
  const commit = git('rev-parse', 'HEAD');
  const tree = exportTree(ROOT, commit);
  let images: Record<string, BuiltImage> = {};
  try {
    if (withImages) {
      const t0 = Date.now();
      say(`building the images of ${released.map((p) => p.name).join(', ')} from ${commit.slice(0, 12)}…`);
      images = buildImages(
        ROOT,
        tree,
        released.map((p) => p.name),
      );
      say(`${released.length} image(s) built in ${Math.round((Date.now() - t0) / 1000)} s`);
    } else say('RELEASE_IMAGES=0: no image built, none recorded (a dry run, in a scratch clone only)');
    const packages = packageCharts(
      helm,
      ROOT,
      tree,
      Object.fromEntries(charts.map((c) => [c, record.charts[c]!.version])),
    );
    for (const [c, pkg] of Object.entries(packages)) {
      record.charts[c] = pkg;
      say(`${pkg.package} ${pkg.digest}`);
    }
  } finally {
    rmSync(tree, { recursive: true, force: true });
  }
  for (const p of released)
    record.services[p.name] = {
      version: packageVersion(p.workspace),
      commit,
      date,
      ...(images[p.name] && { image: images[p.name] }),
    };
  record.history.push({
    date,
    commit,
    released: Object.fromEntries(released.map((p) => [p.name, packageVersion(p.workspace)])),
    ...(withGateway && { api: record.api.version }),
  });
  record['//'] = [
    'The releases of the platform (make release, tools/release.ts). services: each deployable as last released, built from `commit`;',
    "its image: built from that commit by scripts/images.sh, `digest` podman's manifest digest of it as built, `id` its config digest (a push keeps it).",
    'charts: each chart as last released; `package` made by helm package from that commit, `digest` the sha256 of that file (decision 0134).',
    'contracts: sha256 of releases/contracts/*, the contracts as last released, which make contracts-check compares today against.',
  ];
  writeRecord(record);
  git('add', '-A', 'releases');
  git('commit', '-q', '-m', `Record the release of ${date} (${commit.slice(0, 12)}): ${names}`);
  for (const p of released) git('tag', `${p.name}@${packageVersion(p.workspace)}`, commit);
  say(`released ${names} at ${commit.slice(0, 12)}; recorded in releases/record.json`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
