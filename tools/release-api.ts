/**
 * `make release`'s step 3 (release.ts): the tenant API as the release serves it. Its version and the
 * tenants' changelog are services/gateway/src/api-release.json, which the gateway compiles in: the document's
 * info.version and /docs/changelog (read once when the gateway starts).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CONTRACTS, judgedAsTenantsRead, ROOT, type ReleaseRecord } from './contracts';
import type { TenantNote } from './release-artifacts';
import { servedDocument } from './served-document';

/** A command of the release, run at the repository's root (shared with release.ts). */
export const run = (cmd: string, args: string[], opts: { quiet?: boolean } = {}) =>
  execFileSync(cmd, args, {
    cwd: ROOT,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', opts.quiet ? 'pipe' : 'inherit'],
  }).trim();
export const say = (s: string) => process.stdout.write(`[release] ${s}\n`);
export type Bump = 'major' | 'minor' | 'patch';
export const bump = (v: string, kind: Bump) => {
  const [ma, mi, pa] = v.split('.').map(Number) as [number, number, number];
  return kind === 'major' ? `${ma + 1}.0.0` : kind === 'minor' ? `${ma}.${mi + 1}.0` : `${ma}.${mi}.${pa + 1}`;
};

const API_RELEASE = path.join(ROOT, 'services/gateway/src/api-release.json');

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

/**
 * 3. The tenant API as this release serves it. When the served document changed or tenants' notes
 * exist, `/api/v1` moves (minor when oasdiff's changelog lists changes, else patch: wording or
 * behaviour only) and the tenants' changelog gets oasdiff's lines, the operations deprecated since
 * the last release and the notes. The document's info.version moves with it: step 4 snapshots it.
 */
export async function tenantApi(record: ReleaseRecord, date: string, notes: TenantNote[]): Promise<void> {
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
  if (same && notes.length === 0) return;
  const wording =
    !same && changes.length === 0 ? ['Reference wording only: no operation, field or payload changed.'] : [];
  api.version = first ? '1.0.0' : bump(api.version, changes.length ? 'minor' : 'patch');
  api.changelog.unshift({ version: api.version, date, changes: [...changes, ...wording, ...notes.map((n) => n.text)] });
  writeFileSync(API_RELEASE, `${JSON.stringify(api, null, 2)}\n`);
  say(`/api/v1 ${api.version}: ${changes.length} change(s) and ${notes.length} note(s) in the tenants' changelog`);
  record.api = { version: api.version, date };
  // The SDK carries the document as served (test/e2e/sdk.e2e.test.ts checks it), in a process that
  // loads the routes with the new version.
  run(process.execPath, ['--import', 'tsx', 'tools/sdk-generate.ts']);
}
