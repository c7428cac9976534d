/**
 * A version names one build (decision 0135): what each deployable ships, and whether any of it
 * changed since the deployable's release. `make contracts-check` refuses a change to what a
 * deployable ships while no pending changeset names it, so its next image cannot carry its last
 * release's version with other content.
 *
 * What a deployable ships is what deploy/images/Dockerfile builds its image from and what its chart packages:
 * - its workspace and, through `dependencies`, every workspace it links (the kit, the generated
 *   contracts), tests and Markdown aside (the image keeps only compiled `dist/`, tests removed);
 * - the production dependencies package-lock.json resolves for it (versions and integrity), not the
 *   lock file as a whole: a test tool's upgrade ships in no image;
 * - tsconfig.base.json, deploy/images/Dockerfile, and its own entry of services/manifest.json;
 * - its chart (Chart.yaml by what it says: its comments are not packaged) and the library chart
 *   every service chart vendors (charts/common).
 * The umbrella chart (charts/platform) is released with every release: a change to it needs a pending
 * changeset for any deployable.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { Verdict } from './contracts';

/** One deployable: a process of services/manifest.json. */
export interface Deployable {
  name: string;
  workspace: string;
  chart: string;
}

/** Reads a file of the tree at `commit`, or of the work tree when `commit` is undefined; undefined when absent. */
type Reader = (file: string, commit?: string) => string | undefined;

export interface Tree {
  root: string;
  /** Whether `commit` is in this repository's history. */
  has(commit: string): boolean;
  /** Files under `paths` that differ between `commit` and the work tree (uncommitted and untracked files included). */
  changed(commit: string, paths: string[]): string[];
  read: Reader;
}

export function gitTree(root: string): Tree {
  const git = (...args: string[]) => spawnSync('git', ['-C', root, ...args], { encoding: 'utf8', maxBuffer: 1 << 26 });
  return {
    root,
    has: (commit) => git('cat-file', '-e', `${commit}^{commit}`).status === 0,
    changed: (commit, paths) => {
      const diff = git('diff', '--name-only', '--no-renames', commit, '--', ...paths);
      if (diff.status !== 0) throw new Error(`git diff ${commit}: ${diff.stderr}`);
      const untracked = git('ls-files', '--others', '--exclude-standard', '--', ...paths).stdout;
      return [...new Set([...diff.stdout.split('\n'), ...untracked.split('\n')].filter(Boolean))].sort();
    },
    read: (file, commit) => {
      if (commit === undefined) {
        const p = path.join(root, file);
        return existsSync(p) ? readFileSync(p, 'utf8') : undefined;
      }
      const r = git('show', `${commit}:${file}`);
      return r.status === 0 ? r.stdout : undefined;
    },
  };
}

/** Source that is not compiled into the image: tests, their fixtures, and prose. */
const NOT_SHIPPED = /(^|\/)test\/|\.test\.ts$|\.md$|(^|\/)README/;

type Json = Record<string, any>;

/** Each workspace's package name → its folder, as the root package.json lists them (at `commit`). */
function workspaces(tree: Tree, commit?: string): Map<string, string> {
  const root = JSON.parse(tree.read('package.json', commit) ?? '{}') as { workspaces?: string[] };
  const out = new Map<string, string>();
  for (const w of root.workspaces ?? []) {
    const pkg = tree.read(`${w}/package.json`, commit);
    if (pkg) out.set((JSON.parse(pkg) as { name: string }).name, w);
  }
  return out;
}

/** The workspace and every workspace it links through `dependencies`, transitively. */
export function linkedWorkspaces(tree: Tree, workspace: string): string[] {
  const byName = workspaces(tree);
  const seen = new Set<string>([workspace]);
  const queue = [workspace];
  while (queue.length) {
    const w = queue.shift()!;
    const deps = (JSON.parse(tree.read(`${w}/package.json`) ?? '{}') as Json).dependencies ?? {};
    for (const name of Object.keys(deps as Json)) {
      const dep = byName.get(name);
      if (!dep || seen.has(dep)) continue;
      seen.add(dep);
      queue.push(dep);
    }
  }
  return [...seen];
}

/**
 * The production dependencies package-lock.json resolves for a workspace, as `where@version#integrity`
 * lines (Node's lookup: the nearest node_modules up from the one that asks), linked workspaces
 * followed. What `npm ci --omit=dev --workspace` installs into the image.
 */
export function resolvedDependencies(lockText: string | undefined, workspace: string): string[] {
  if (!lockText) return [];
  const packages = (JSON.parse(lockText) as { packages: Record<string, Json> }).packages;
  const out = new Set<string>();
  const seen = new Set<string>();
  const visit = (at: string) => {
    if (seen.has(at)) return;
    seen.add(at);
    const entry = packages[at];
    if (!entry) return;
    if (entry.link) return visit(entry.resolved as string);
    if (at.includes('node_modules/')) out.add(`${at}@${entry.version}#${entry.integrity ?? ''}`);
    const deps = { ...entry.dependencies, ...entry.optionalDependencies, ...entry.peerDependencies } as Json;
    for (const name of Object.keys(deps)) {
      // The nearest node_modules/<name> from `at` upwards.
      for (
        let dir = at;
        ;
        dir = dir.includes('/node_modules/') ? dir.slice(0, dir.lastIndexOf('/node_modules/')) : ''
      ) {
        const candidate = dir ? `${dir}/node_modules/${name}` : `node_modules/${name}`;
        if (packages[candidate]) {
          visit(candidate);
          break;
        }
        if (!dir) break;
      }
    }
  };
  visit(workspace);
  return [...out].sort();
}

/** A YAML file by what it says (comments and layout aside). */
const sameYaml = (a: string | undefined, b: string | undefined) =>
  JSON.stringify(a === undefined ? null : parseYaml(a)) === JSON.stringify(b === undefined ? null : parseYaml(b));

const entryOf = (manifest: string | undefined, name: string) =>
  JSON.stringify(
    ((JSON.parse(manifest ?? '{"processes":[]}') as { processes: Json[] }).processes ?? []).find(
      (p) => p.name === name,
    ),
  );

/** What a deployable ships that differs from the tree of `commit` (its release), each said in a few words. */
export function shippedChanges(tree: Tree, d: Deployable, commit: string): string[] {
  const changes: string[] = [];
  const sources = [...linkedWorkspaces(tree, d.workspace), 'tsconfig.base.json', 'deploy/images/Dockerfile'];
  changes.push(
    ...tree.changed(commit, sources).filter((f) => !NOT_SHIPPED.test(f) && !f.endsWith('package-lock.json')),
  );
  if (
    entryOf(tree.read('services/manifest.json', commit), d.name) !==
    entryOf(tree.read('services/manifest.json'), d.name)
  )
    changes.push(`services/manifest.json (the ${d.name} entry)`);
  const before = new Set(resolvedDependencies(tree.read('package-lock.json', commit), d.workspace));
  const now = resolvedDependencies(tree.read('package-lock.json'), d.workspace);
  const moved = [...now.filter((x) => !before.has(x)), ...[...before].filter((x) => !now.includes(x))];
  if (moved.length)
    changes.push(
      `package-lock.json: ${moved.length} production dependency line(s) resolved differently (${moved[0]!.split('#')[0]}…)`,
    );
  changes.push(...chartChanges(tree, [`charts/${d.chart}`, 'charts/common'], commit));
  return changes;
}

/** Files of the charts that differ since `commit`, a Chart.yaml only when what it says differs. */
export function chartChanges(tree: Tree, charts: string[], commit: string, ignore?: RegExp): string[] {
  return tree
    .changed(commit, charts)
    .filter((f) => !ignore?.test(f))
    .filter((f) => !f.endsWith('/Chart.yaml') || !sameYaml(tree.read(f, commit), tree.read(f)));
}

const SHOWN = 6;

/**
 * Every deployable whose shipped content changed since its recorded release needs a pending changeset
 * naming its package; a change to the umbrella chart needs a pending changeset for any deployable.
 * `packages` maps a deployable's name to its npm package name; `pending` is `changeset status`'s
 * releases (package → next version).
 */
export function unreleasedCheck(
  tree: Tree,
  deployables: (Deployable & { package: string })[],
  record: { services: Record<string, { version: string; commit: string }>; history: { commit: string }[] },
  pending: Record<string, string>,
): Verdict {
  const verdict: Verdict = { problems: [], notes: [] };
  const missing: string[] = [];
  for (const d of deployables) {
    const released = record.services[d.name];
    if (!released) {
      verdict.notes.push(`${d.name}: never released (its first changeset releases it)`);
      continue;
    }
    if (!tree.has(released.commit)) {
      verdict.problems.push(
        `${d.name}: its release commit ${released.commit.slice(0, 12)} is not in this clone's history (a shallow clone? git fetch --unshallow)`,
      );
      continue;
    }
    const changes = shippedChanges(tree, d, released.commit);
    const short = `${d.name} ${released.version} (${released.commit.slice(0, 12)})`;
    if (!changes.length) verdict.notes.push(`${short}: ships what it was released with`);
    else if (d.package in pending)
      verdict.notes.push(`${short}: ${changes.length} shipped change(s), released next as ${pending[d.package]}`);
    else {
      missing.push(d.package);
      verdict.problems.push(
        `${short}: ${changes.length} shipped change(s) and no pending changeset for ${d.package}: ${changes.slice(0, SHOWN).join(', ')}${changes.length > SHOWN ? `, … (+${changes.length - SHOWN} more)` : ''}`,
      );
    }
  }
  const last = record.history.at(-1)?.commit;
  if (last && tree.has(last)) {
    // The umbrella's version, pins and lock are make release's; its vendored subcharts are the service charts.
    const umbrella = chartChanges(tree, ['charts/platform'], last, /^charts\/platform\/(Chart\.lock|charts\/)/);
    if (umbrella.length && !Object.keys(pending).length) {
      verdict.problems.push(
        `charts/platform: ${umbrella.length} change(s) since the last release (${umbrella.slice(0, SHOWN).join(', ')}) and no pending changeset: the umbrella is released with any deployable`,
      );
    } else if (umbrella.length)
      verdict.notes.push(`charts/platform: ${umbrella.length} change(s), released with the next release`);
  }
  if (missing.length)
    verdict.problems.push(
      `write a changeset for ${missing.join(', ')} (npx changeset; or make changeset-shipped SUMMARY="…" writes a patch one naming each)`,
    );
  return verdict;
}

/** Writes a patch changeset naming every deployable whose shipped content changed with none pending; answers its path. */
export function writeShippedChangeset(
  tree: Tree,
  deployables: (Deployable & { package: string })[],
  record: { services: Record<string, { version: string; commit: string }>; history: { commit: string }[] },
  pending: Record<string, string>,
  summary: string,
): string | undefined {
  const names = deployables.filter(
    (d) =>
      record.services[d.name] &&
      !(d.package in pending) &&
      shippedChanges(tree, d, record.services[d.name]!.commit).length > 0,
  );
  if (!names.length) return undefined;
  const dir = path.join(tree.root, '.changeset');
  const taken = new Set(readdirSync(dir));
  let file = 'shipped-changes.md';
  for (let i = 2; taken.has(file); i++) file = `shipped-changes-${i}.md`;
  writeFileSync(
    path.join(dir, file),
    `---\n${names.map((d) => `"${d.package}": patch`).join('\n')}\n---\n\n${summary.trim()}\n`,
  );
  return path.join('.changeset', file);
}
