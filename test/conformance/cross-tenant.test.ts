import { readdirSync } from 'node:fs';
import path from 'node:path';
import { ROOT, read, sourcesUnder } from './tree';

// Reaching across tenants is a named, reviewed operation (docs/cross-tenant.md): every
// `crossTenant(why)`, `pagesAcrossTenants(why)` and `changedAcrossTenants(why, …)` in the gateway,
// the services and the kit gives a literal reason at its call, keeps no handle in a field or behind a method, and is listed in the
// reviewed table; the table lists nothing that is gone.

const REGISTRY = 'docs/cross-tenant.md';
/** Where the escape is defined, not used. */
const DEFINITIONS = new Set([
  'libs/kit/src/mongo/tenant-collection.ts',
  'libs/kit/src/mongo/cross-tenant.ts',
  'libs/kit/src/mongo/tenant-keyed.ts',
]);

const serviceDirs = readdirSync(path.join(ROOT, 'services'), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => `services/${d.name}/src`);
const files = ['services/gateway/src', ...serviceDirs]
  .flatMap((d) => sourcesUnder(d))
  .filter((f) => !DEFINITIONS.has(f));

interface Reach {
  file: string;
  operation: string;
  reason: string;
}

const OPERATIONS = /\.(crossTenant|pagesAcrossTenants|changedAcrossTenants)\(/g;
/** The argument as a reviewer may read it: one literal, or one `const` name, alone before `)` or `,` (no concatenation). */
const LONE_REASON = /^\s*(?:'([^'\n]*)'|"([^"\n]*)"|(\w+))\s*[,)]/;

/** Every cross-tenant call of a file, its reason resolved (a literal, or a `const` of one in the file); `undefined` when it is neither. */
function reachesOf(file: string): (Reach | { file: string; operation: string; reason: undefined; argument: string })[] {
  const src = read(file);
  const consts = new Map([...src.matchAll(/const (\w+) = (['"])(.*?)\2;/g)].map((m) => [m[1]!, m[3]!]));
  return [...src.matchAll(OPERATIONS)].map((m) => {
    const after = src.slice(m.index + m[0].length);
    const lone = LONE_REASON.exec(after);
    const reason = lone ? (lone[1] ?? lone[2] ?? consts.get(lone[3]!)) : undefined;
    return reason === undefined
      ? { file, operation: m[1]!, reason, argument: after.slice(0, 80) }
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
      const src = read(f);
      // A handle with no operation called on it is kept (a field, an initializer, an arrow or a
      // method handing it out), unless it is a local `const` of the function that uses it.
      const handles = [...src.matchAll(/\.crossTenant\(\s*(?:'[^']*'|"[^"]*"|\w+)\s*\)(?!\s*\.)/g)];
      return handles.some((h) => !/const \w+\s*=\s*[\w.\s]*$/.test(src.slice(Math.max(0, h.index - 120), h.index)));
    });
    expect(kept).toEqual([]);
  });

  it(`lists every operation in ${REGISTRY}, and nothing else`, () => {
    const doc = read(REGISTRY);
    const listed = new Set(
      [...doc.matchAll(/^\| `([^`]+)` \| `(\w+)` \| (.+?) \|$/gm)].map((m) => `${m[1]} | ${m[2]} | ${m[3]}`),
    );
    const inCode = new Set(found.filter((r): r is Reach => r.reason !== undefined).map(key));
    expect({ notListed: [...inCode].filter((k) => !listed.has(k)).sort() }).toEqual({ notListed: [] });
    expect({ listedButGone: [...listed].filter((k) => !inCode.has(k)).sort() }).toEqual({ listedButGone: [] });
  });
});
