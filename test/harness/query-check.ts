import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

interface Finding {
  process: string;
  collection: string;
  command: string;
  shape: { equality: string[]; range: string[]; sort: [string, number][] };
  declared: string | null;
  problem: string | null;
  filter?: unknown;
}

/** What the processes under test found about the queries they sent (kit checkQueries), one line per problem. */
export function queryCheckFindings(dir: string): { checked: number; problems: string[] } {
  if (!existsSync(dir)) return { checked: 0, problems: [] };
  const findings: Finding[] = readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .flatMap((f) =>
      readFileSync(path.join(dir, f), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Finding),
    );
  // One line per problem and shape (the first filter seen of it as an example).
  const problems = new Map<string, string>();
  for (const f of findings) {
    if (!f.problem) continue;
    const s = f.shape;
    const key = `${f.problem}: ${f.process} ${f.collection} ${f.command} equality [${s.equality.join(', ')}] range [${s.range.join(', ')}] sort ${JSON.stringify(Object.fromEntries(s.sort))}${f.declared ? ` (declared as "${f.declared}")` : ''}`;
    if (!problems.has(key)) problems.set(key, `${key}, e.g. filter ${JSON.stringify(f.filter)}`);
  }
  return { checked: findings.length, problems: [...problems.values()].sort() };
}
