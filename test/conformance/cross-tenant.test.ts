import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

// Reaching across tenants is a named, reviewed operation (docs/cross-tenant.md): every
// `crossTenant(why)` and `pagesAcrossTenants(why)` in the gateway, the services and the kit gives a
// literal reason at its call, keeps no handle in a field or behind a method, and is listed in the
// reviewed table; the table lists nothing that is gone.

const ROOT = path.resolve(__dirname, '../..');
const REGISTRY = 'docs/cross-tenant.md';
/** Where the escape is defined, not used. */
const DEFINITIONS = new Set([
  'services/kit/src/mongo/tenant-collection.ts',
  'services/kit/src/mongo/cross-tenant.ts',
  'services/kit/src/mongo/tenant-keyed.ts',
]);

const sources = (dir: string): string[] =>
  readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((d) =>
    d.isDirectory()
      ? sources(`${dir}/${d.name}`)
      : d.name.endsWith('.ts') && !d.name.endsWith('.test.ts')
        ? [`${dir}/${d.name}`]
        : [],
  );
const serviceDirs = readdirSync(path.join(ROOT, 'services'), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => `services/${d.name}/src`);
const files = ['gateway/src', ...serviceDirs].flatMap(sources).filter((f) => !DEFINITIONS.has(f));

interface Reach {
  file: string;
  operation: string;
  reason: string;
}

/** Every cross-tenant call of a file, its reason resolved (a literal, or a `const` of one in the file); `undefined` when it is neither. */
function reachesOf(file: string): (Reach | { file: string; operation: string; reason: undefined; argument: string })[] {
  const src = readFileSync(path.join(ROOT, file), 'utf8');
  const consts = new Map([...src.matchAll(/const (\w+) = (['"])(.*?)\2;/g)].map((m) => [m[1]!, m[3]!]));
  return [...src.matchAll(/\.(crossTenant|pagesAcrossTenants)\(\s*(?:(['"])(.*?)\2|([^,)]*))/gs)].map((m) => {
    const reason = m[3] ?? consts.get((m[4] ?? '').trim());
    return reason === undefined
      ? { file, operation: m[1]!, reason, argument: (m[4] ?? '').trim() }
      : { file, operation: m[1]!, reason };
  });
}

const key = (r: Reach) => `${r.file} | ${r.operation} | ${r.reason}`;

describe('reaching across tenants', () => {
  const found = files.flatMap(reachesOf);

  it('gives a literal reason at every call', () => {
    expect(found.length).toBeGreaterThan(30);
    expect(found.filter((r) => r.reason === undefined)).toEqual([]);
  });

  it('keeps no cross-tenant handle in a field or behind a method (a reason per operation, at the call)', () => {
    const kept = files.filter((f) => {
      const src = readFileSync(path.join(ROOT, f), 'utf8');
      return (
        /this\.\w+\s*=\s*this\.\w+\.crossTenant\(/.test(src) || /return\s+this\.\w+\.crossTenant\([^)]*\)\s*;/.test(src)
      );
    });
    expect(kept).toEqual([]);
  });

  it(`lists every operation in ${REGISTRY}, and nothing else`, () => {
    const doc = readFileSync(path.join(ROOT, REGISTRY), 'utf8');
    const listed = new Set(
      [...doc.matchAll(/^\| `([^`]+)` \| `(\w+)` \| (.+?) \|$/gm)].map((m) => `${m[1]} | ${m[2]} | ${m[3]}`),
    );
    const inCode = new Set(found.filter((r): r is Reach => r.reason !== undefined).map(key));
    expect({ notListed: [...inCode].filter((k) => !listed.has(k)).sort() }).toEqual({ notListed: [] });
    expect({ listedButGone: [...listed].filter((k) => !inCode.has(k)).sort() }).toEqual({ listedButGone: [] });
  });
});
