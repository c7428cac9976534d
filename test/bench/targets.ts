/**
 * The last step of `make bench`: gathers every row with a met/not met verdict from the sections
 * the benchmarks just wrote into docs/performance.md, into one table at its top (section
 * `targets`), with the date each section was written. It reads and reports; it never fails.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../harness/processes';
import { writePerformanceSection } from './report';

const file = path.join(ROOT, 'docs/performance.md');
const doc = readFileSync(file, 'utf8');
const cells = (line: string) =>
  line
    .trim()
    .replace(/^\||\|$/g, '')
    .split('|')
    .map((c) => c.trim());
const rows: string[] = [];
for (const m of doc.matchAll(/<!-- bench:(\w+) -->([\s\S]*?)<!-- \/bench:\1 -->/g)) {
  const [, name, body] = m;
  if (name === 'targets') continue;
  const title = /^## (.+)$/m.exec(body!)?.[1] ?? name!;
  const lines = body!.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const header = lines[i]!.startsWith('|') ? cells(lines[i]!) : undefined;
    if (!header || header.at(-1) !== 'met' || !lines[i + 1]?.startsWith('|---')) continue;
    const targetAt = header.indexOf('target');
    for (let j = i + 2; j < lines.length && lines[j]!.startsWith('|'); j++) {
      const row = cells(lines[j]!);
      const met = row.at(-1)!;
      if (met !== 'yes' && met !== 'no') continue;
      // Tables name what is measured first, or (| target | measured | met |) the target itself.
      const target = targetAt >= 0 ? row[targetAt]! : '';
      const what = targetAt === 0 ? '' : row[0]!;
      const measured = (targetAt === 0 ? row.slice(1, -1) : row.slice(1, targetAt >= 0 ? targetAt : -1))
        .filter((c) => c !== '')
        .join('; ');
      rows.push(`| ${title} | ${what} | ${measured} | ${target} | **${met}** |`);
    }
  }
}
writePerformanceSection(
  'targets',
  `## Every target, as last measured

Gathered by \`make bench\`'s last step (\`test/bench/targets.ts\`) from the sections below, each written by its
benchmark in the same run (the sections carry their own dates and details). ${rows.filter((r) => r.endsWith('**yes** |')).length} of ${rows.length} met.

| section | measured | result | target | met |
|---|---|---|---|---|
${rows.join('\n')}`,
);
process.stdout.write(`targets: ${rows.length} rows gathered into docs/performance.md\n`);
