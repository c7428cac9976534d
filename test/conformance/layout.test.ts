import { execFileSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { ROOT, read } from './tree';

// The layout shows the design (decision 0159): deployables in services/ (exactly the manifest's processes),
// libraries in libs/, generators in tools/, deploy/ by target, and the README and the layout guide name each folder.

const tracked = execFileSync('git', ['-C', ROOT, 'ls-files'], { encoding: 'utf8' }).split('\n').filter(Boolean);
/** Folders holding tracked files, right under `dir` ('' for the root); dot-folders aside. */
const foldersIn = (dir: string) => [
  ...new Set(
    tracked
      .filter((f) => (dir ? f.startsWith(`${dir}/`) : true))
      .map((f) => (dir ? f.slice(dir.length + 1) : f).split('/'))
      .filter((parts) => parts.length > 1 && !parts[0]!.startsWith('.'))
      .map((parts) => parts[0]!),
  ),
];
const LAYOUT_GUIDE = read('docs/guides/layout.md');
const README = read('README.md');
const README_LAYOUT = /## Layout\n([\s\S]*?)\n## /.exec(README)?.[1] ?? '';
const manifest = JSON.parse(read('services/manifest.json')) as { processes: { name: string; workspace: string }[] };
const workspaces = (JSON.parse(read('package.json')) as { workspaces: string[] }).workspaces;

const sorted = (xs: Iterable<string>) => [...xs].sort();

describe('the layout', () => {
  it('names every top-level folder in the README and in the layout guide', () => {
    expect(README_LAYOUT).not.toBe('');
    const folders = foldersIn('');
    expect(folders.length).toBeGreaterThan(5);
    expect({
      'missing from the README': folders.filter((d) => !README_LAYOUT.includes(`\`${d}/`)),
      'missing from docs/guides/layout.md': folders.filter((d) => !new RegExp(`^${d}/`, 'm').test(LAYOUT_GUIDE)),
    }).toEqual({ 'missing from the README': [], 'missing from docs/guides/layout.md': [] });
  });

  it('keeps in services/ exactly the deployed processes of the manifest, each in its own folder', () => {
    const inManifest = manifest.processes.map((p) => p.workspace);
    const inFolder = foldersIn('services').map((d) => `services/${d}`);
    expect(sorted(inFolder)).toEqual(sorted(inManifest));
  });

  it('keeps every other workspace out of services/: libraries in libs/, contracts, SDK, launcher, tests', () => {
    const deployed = new Set(manifest.processes.map((p) => p.workspace));
    const others = workspaces.filter((w) => !deployed.has(w));
    expect(others.filter((w) => w.startsWith('services/'))).toEqual([]);
    expect(others).toEqual(expect.arrayContaining(['libs/kit']));
    // Every workspace is named in the layout guide by its folder.
    expect(workspaces.filter((w) => !new RegExp(`(^|\\s)${w}/`, 'm').test(LAYOUT_GUIDE))).toEqual([]);
  });

  it('organises deploy/ by target: folders only, each named in the layout guide', () => {
    expect(tracked.filter((f) => /^deploy\/[^/]+$/.test(f))).toEqual([]);
    const targets = foldersIn('deploy');
    expect(targets).toEqual(expect.arrayContaining(['images', 'local', 'cluster']));
    expect(targets.filter((t) => !LAYOUT_GUIDE.includes(`deploy/${t}/`))).toEqual([]);
  });

  it('runs generators and release tools from tools/: make runs no other script but the benchmarks', () => {
    const makefile = read('Makefile');
    const scripts = [...makefile.matchAll(/node --import tsx (\S+\.ts)/g)].map((m) => m[1]!.replace(/^(\.\.\/)+/, ''));
    expect(scripts.length).toBeGreaterThan(3);
    expect(scripts.filter((s) => !s.startsWith('tools/') && !s.startsWith('test/bench/'))).toEqual([]);
    expect(tracked.filter((f) => f.startsWith('tools/') && f.endsWith('.test.ts'))).toEqual([]);
  });
});

describe("the kit's entry points (decision 0160)", () => {
  const pkg = JSON.parse(read('libs/kit/package.json')) as {
    exports: Record<string, string>;
    typesVersions: { '*': Record<string, string[]> };
  };
  const entryFiles = readdirSync(path.join(ROOT, 'libs/kit/src/entry')).map((f) => f.replace(/\.ts$/, ''));
  const exported = Object.keys(pkg.exports)
    .filter((k) => k !== '.' && k !== './package.json' && k !== './telemetry')
    .map((k) => k.slice(2));

  it('exports each file of src/entry/ as its subpath, with its types, and no other', () => {
    expect(sorted(exported)).toEqual(sorted(entryFiles));
    for (const job of entryFiles) {
      expect(pkg.exports[`./${job}`]).toBe(`./dist/entry/${job}.js`);
      expect(pkg.typesVersions['*'][job]).toEqual([`dist/entry/${job}.d.ts`]);
    }
  });

  it('is imported by job everywhere outside the kit (the index is for nothing else)', () => {
    const byIndex = tracked.filter(
      (f) => f.endsWith('.ts') && !f.startsWith('libs/kit/') && /from '@voiceapi\/kit'/.test(read(f)),
    );
    expect(byIndex).toEqual([]);
  });

  it('re-exports every entry from the index, and names each in the primer', () => {
    const index = read('libs/kit/src/index.ts');
    expect(entryFiles.filter((job) => !index.includes(`export * from './entry/${job}';`))).toEqual([]);
    const primer = read('libs/kit/README.md');
    expect(entryFiles.filter((job) => !primer.includes(`\`@voiceapi/kit/${job}\``))).toEqual([]);
  });
});
