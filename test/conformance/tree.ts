import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/** The repository's root: the conformance checks read its files as they are. */
export const ROOT = path.resolve(__dirname, '../..');

export const read = (file: string): string => readFileSync(path.join(ROOT, file), 'utf8');

/** The TypeScript files under a folder (relative to the root), at any depth; specs (`*.test.ts`) only when asked. */
export function sourcesUnder(dir: string, opts: { tests?: boolean } = {}): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((d) =>
    d.isDirectory()
      ? sourcesUnder(`${dir}/${d.name}`, opts)
      : d.name.endsWith('.ts') && (opts.tests || !d.name.endsWith('.test.ts'))
        ? [`${dir}/${d.name}`]
        : [],
  );
}
