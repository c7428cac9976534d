import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { ROOT } from './tree';

// A file a reader can hold in mind: no source file (code, tests, scripts) over 300 lines unless
// its first lines say why, as `Over 300 lines because <reason>` in a comment. Generated code is
// left out (it is written by its generator, not read).

const LIMIT = 300;
const SOURCE = /\.(ts|js|mjs|cjs|py|sh)$/;
const GENERATED = [/^proto\/gen\//, /^sdk\/[^/]+\/src\/generated\//, /\.d\.ts$/];
const REASON = /^\s*(\/\/|#|\*|\/\*)\s*Over 300 lines because \S.{9,}/m;
/** How far down the reason may stand (after a shebang, imports of a test's environment, a file comment's first lines). */
const HEAD_LINES = 15;

const tracked = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' })
  .split('\n')
  .filter((f) => SOURCE.test(f) && !GENERATED.some((g) => g.test(f)) && !f.startsWith('../'));

describe('source files', () => {
  const sizes = tracked.map((file) => {
    const text = readFileSync(path.join(ROOT, file), 'utf8');
    return {
      file,
      lines: text.split('\n').length - (text.endsWith('\n') ? 1 : 0),
      head: text.split('\n').slice(0, HEAD_LINES).join('\n'),
    };
  });

  it('are read from git', () => {
    expect(sizes.length).toBeGreaterThan(300);
  });

  it(`over ${LIMIT} lines say why at their top`, () => {
    const unexplained = sizes
      .filter((s) => s.lines > LIMIT && !REASON.test(s.head))
      .map((s) => `${s.file} (${s.lines} lines)`);
    expect(unexplained).toEqual([]);
  });

  it(`of ${LIMIT} lines or fewer carry no stale reason`, () => {
    const stale = sizes
      .filter((s) => s.lines <= LIMIT && REASON.test(s.head))
      .map((s) => `${s.file} (${s.lines} lines)`);
    expect(stale).toEqual([]);
  });
});
