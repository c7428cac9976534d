import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from '../harness/processes';

/**
 * Writes one benchmark's part of docs/performance.md, between its markers, leaving the other
 * benchmarks' parts as they were (each bench runs on its own and reports its own section).
 */
export function writePerformanceSection(name: string, markdown: string): void {
  const file = path.join(ROOT, 'docs/performance.md');
  const start = `<!-- bench:${name} -->`;
  const end = `<!-- /bench:${name} -->`;
  let doc = existsSync(file) ? readFileSync(file, 'utf8') : '# Performance\n';
  const block = `${start}\n${markdown.trim()}\n${end}`;
  const i = doc.indexOf(start);
  const j = doc.indexOf(end);
  doc = i >= 0 && j > i ? doc.slice(0, i) + block + doc.slice(j + end.length) : `${doc.trimEnd()}\n\n${block}\n`;
  writeFileSync(file, doc);
}
