import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import path from 'node:path';
import { loadManifest } from '@voiceapi/local-infra';
import { ROOT } from './processes';

/**
 * A recorded release's build, beside this checkout: the release commit's tree (`git archive`), its
 * locked npm dependencies and `tsc -b`, made once per machine and commit under
 * `~/.cache/voiceapi/releases/<commit>` (VOICEAPI_CACHE_DIR moves it, as it does the store) and
 * answered as the root to start its processes from (`System.builds`). Needs the commit in this
 * repository's history (a clone has it; a shallow one may not).
 */
export function releaseBuild(commit: string): string {
  const cache = process.env.VOICEAPI_CACHE_DIR ?? path.join(homedir(), '.cache/voiceapi');
  const dir = path.join(cache, 'releases', commit);
  if (existsSync(path.join(dir, '.built'))) return dir;
  const part = `${dir}.part`;
  rmSync(part, { recursive: true, force: true });
  mkdirSync(part, { recursive: true });
  const sh = (cmd: string, args: string[], cwd = part) =>
    execFileSync(cmd, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 });
  const started = Date.now();
  sh('bash', ['-c', `git -C "${ROOT}" archive --format=tar "${commit}" | tar -x -C "${part}"`], ROOT);
  // The release's own lock file: what was shipped, not what this checkout would install.
  sh('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline']);
  sh('npx', ['--no-install', 'tsc', '-b']);
  writeFileSync(
    path.join(part, '.built'),
    `${new Date().toISOString()} in ${Math.round((Date.now() - started) / 1000)} s\n`,
  );
  rmSync(dir, { recursive: true, force: true });
  renameSync(part, dir);
  return dir;
}

const manifests = new Map<string, ReturnType<typeof loadManifest>>();

/** A process's entry file in the build it runs from (undefined: this checkout): a release's own manifest says where it
 * was then, since a layout may have moved since (decision 0159). */
export function entryIn(name: string, root: string | undefined): string {
  const key = root ?? ROOT;
  const built = manifests.get(key) ?? loadManifest(path.join(key, 'services/manifest.json'));
  manifests.set(key, built);
  const p = built.processes.find((x) => x.name === name);
  if (!p) throw new Error(`${name} is not a process of ${root ?? 'this checkout'}'s services/manifest.json`);
  return p.entry;
}
