/**
 * What `make release` (release.ts) reads from the pending changesets and makes from its release
 * commit (decision 0134):
 * - the tenants' notes: a paragraph of a changeset's summary starting with `Tenants:` says what a
 *   tenant observes change (behaviour, not schema: oasdiff finds those); read before `changeset
 *   version` consumes the changesets, they go into the tenants' changelog;
 * - the release commit's tree (`git archive`), which everything below is built from;
 * - each released chart packaged (`helm package`) into releases/charts/, with the package's sha256;
 * - each released deployable's image (scripts/images.sh with CONTEXT), with podman's digest and id.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

/** A paragraph of a changeset's summary that speaks to tenants, and the changeset it came from. */
export interface TenantNote {
  file: string;
  packages: string[];
  text: string;
}

const TENANTS = /^Tenants:\s*/;

/**
 * The tenants' notes of the pending changesets (.changeset/*.md), by file name: each paragraph (text
 * between blank lines) starting with `Tenants:`, that word taken off and its lines joined into one.
 */
export function tenantNotes(root: string): TenantNote[] {
  const dir = path.join(root, '.changeset');
  const notes: TenantNote[] = [];
  for (const file of readdirSync(dir)
    .filter((f) => f.endsWith('.md') && f !== 'README.md')
    .sort()) {
    const text = readFileSync(path.join(dir, file), 'utf8').replace(/\r\n/g, '\n').trimStart();
    const m = /^---\n([\s\S]*?)\n---\n([\s\S]*)$/.exec(text);
    if (!m) continue; // not a changeset: `changeset version` says so
    const packages = [...m[1]!.matchAll(/^\s*["']?([^"':\s]+)["']?\s*:/gm)].map((p) => p[1]!);
    for (const paragraph of m[2]!.split(/\n\s*\n/)) {
      const p = paragraph.trim();
      if (!TENANTS.test(p)) continue;
      const note = p
        .replace(TENANTS, '')
        .replace(/\s*\n\s*/g, ' ')
        .trim();
      if (!note) throw new Error(`.changeset/${file}: a "Tenants:" paragraph says nothing`);
      notes.push({ file, packages, text: note });
    }
  }
  return notes;
}

const sha256 = (file: string) => `sha256:${createHash('sha256').update(readFileSync(file)).digest('hex')}`;

/** The tree of `commit` in a new temporary folder (what was committed, nothing ignored or untracked). */
export function exportTree(root: string, commit: string): string {
  const dir = mkdtempSync(path.join(tmpdir(), `release-${commit.slice(0, 12)}-`));
  execFileSync('bash', ['-c', 'git -C "$1" archive --format=tar "$2" | tar -x -C "$3"', 'archive', root, commit, dir], {
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  return dir;
}

export interface ChartPackage {
  version: string;
  /** Relative to the repository root: releases/charts/<chart>-<version>.tgz. */
  package: string;
  /** sha256 of that file: helm packages are not byte-reproducible (tar times), so this file is the artifact. */
  digest: string;
}

/**
 * `helm package` of each chart of `tree` into releases/charts/ of `root`, replacing that chart's
 * earlier package there (git history keeps it, at the record commit of its release).
 */
export function packageCharts(
  helm: string,
  root: string,
  tree: string,
  charts: Record<string, string>,
): Record<string, ChartPackage> {
  const out = path.join(root, 'releases/charts');
  mkdirSync(out, { recursive: true });
  const made: Record<string, ChartPackage> = {};
  for (const [chart, version] of Object.entries(charts)) {
    for (const old of readdirSync(out).filter((f) => new RegExp(`^${chart}-\\d+\\.\\d+\\.\\d+.*\\.tgz$`).test(f)))
      rmSync(path.join(out, old));
    execFileSync(helm, ['package', path.join(tree, 'charts', chart), '-d', out], {
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    const file = `releases/charts/${chart}-${version}.tgz`;
    made[chart] = { version, package: file, digest: sha256(path.join(root, file)) };
  }
  return made;
}

export interface BuiltImage {
  /** docker.io/voiceapi/<name>:<version> */
  name: string;
  /** podman's manifest digest of the image as built, or its id when `digestOf` says so (podman gave none). */
  digest: string;
  digestOf?: 'image id';
  /** The image id (the digest of its config): kept by a push, which names it as the manifest's config. */
  id: string;
}

/** Each named process's image built from `tree` (scripts/images.sh, CONTEXT=tree), by process name. */
export function buildImages(root: string, tree: string, names: string[]): Record<string, BuiltImage> {
  const out = execFileSync('bash', [path.join(root, 'scripts/images.sh')], {
    cwd: root,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, CONTEXT: tree, IMAGES: names.join(' '), IMAGE_DIGESTS: '1', IMAGE_TAG: '' },
  });
  const built: Record<string, BuiltImage> = {};
  for (const line of out.split('\n').filter(Boolean)) {
    const [name, digest, id] = line.split(' ') as [string, string, string];
    const proc = /^docker\.io\/voiceapi\/([^:]+):/.exec(name)?.[1];
    if (!proc || !id?.startsWith('sha256:')) throw new Error(`scripts/images.sh printed "${line}"`);
    built[proc] = digest === '-' ? { name, digest: id, digestOf: 'image id', id } : { name, digest, id };
  }
  const missing = names.filter((n) => !built[n]);
  if (missing.length) throw new Error(`scripts/images.sh built no image of ${missing.join(', ')}`);
  return built;
}
