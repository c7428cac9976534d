import { readFileSync } from 'node:fs';
import path from 'node:path';
import {
  END,
  GUIDE,
  ROOT,
  START,
  descriptionOf,
  processes,
  renderConfigTable,
  schemas,
} from '../../tools/config-table';

// docs/guides/configuration.md's settings tables against the config schemas they are generated from
// (tools/config-table.ts): the block is what the generator writes today, and, read back as tables, it names every
// setting of every process's schema, no more; every setting's description is in its schema (`.describe(…)`).

const REGENERATE = 'node --import tsx tools/config-table.ts';
const guide = readFileSync(path.join(ROOT, GUIDE), 'utf8');

/** The guide's block, markers included. */
function block(): string {
  const a = guide.indexOf(START);
  const b = guide.indexOf(END);
  if (a < 0 || b < a) throw new Error(`${GUIDE} has no ${START} … ${END} block`);
  return guide.slice(a, b + END.length);
}

/** The settings each `## <section>` of the block lists (the first cell of each table row). */
function listed(): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let section: string[] | undefined;
  for (const line of block().split('\n')) {
    const heading = /^## (.+)$/.exec(line);
    if (heading) out.set(heading[1]!, (section = []));
    const row = /^\| `([A-Z0-9_]+)` \|/.exec(line);
    if (row) section?.push(row[1]!);
  }
  return out;
}

describe(`${GUIDE}'s settings tables`, () => {
  it(`are what \`${REGENERATE}\` writes from the schemas`, () => {
    const want = renderConfigTable().split('\n');
    const have = block().split('\n');
    const at = want.findIndex((line, i) => line !== have[i]);
    const first =
      at < 0 && want.length === have.length
        ? undefined
        : `line ${(at < 0 ? want.length : at) + 1} of the block: has ${JSON.stringify(have[at] ?? '(end)')}, ` +
          `the schemas give ${JSON.stringify(want[at] ?? '(end)')}; run ${REGENERATE}`;
    expect(first).toBeUndefined();
  });

  it("name every setting of every process's schema, and none it lacks", () => {
    const sections = listed();
    const groups = [...sections.keys()].filter((s) => !processes().some((p) => p.name === s));
    const problems: string[] = [];
    for (const [proc, shape] of schemas()) {
      const own = sections.get(proc);
      if (!own) {
        problems.push(`${proc}: no section`);
        continue;
      }
      // A group's settings are every member's; a process is a member when its schema has them all.
      const inherited = groups
        .map((g) => sections.get(g) ?? [])
        .filter((names) => names.every((n) => n in shape))
        .flat();
      const shown = new Set([...own, ...inherited]);
      for (const name of Object.keys(shape)) if (!shown.has(name)) problems.push(`${proc}.${name}: not listed`);
      for (const name of own) if (!(name in shape)) problems.push(`${proc}.${name}: listed, not in its schema`);
    }
    expect(problems).toEqual([]);
  });

  it('describe every setting from its schema', () => {
    const undescribed = [...schemas()].flatMap(([proc, shape]) =>
      Object.entries(shape)
        .filter(([, field]) => !descriptionOf(field)?.trim())
        .map(([name]) => `${proc}.${name}`),
    );
    expect(undescribed).toEqual([]);
  });
});
