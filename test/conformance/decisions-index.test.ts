import { readdirSync } from 'node:fs';
import path from 'node:path';
import { ROOT, read } from './tree';

// The decision records (docs/decisions/NNNN-*.md) and their index (docs/decisions/README.md): each record
// has one status line of one format under its heading, the index lists every record with its title and
// status, and a record replaced or changed by another says so on both sides.

const DIR = 'docs/decisions';
const INDEX = `${DIR}/README.md`;
const FILES = readdirSync(path.join(ROOT, DIR))
  .filter((f) => /^\d{4}-.+\.md$/.test(f))
  .sort();

type Relation = 'superseded by' | 'supersedes' | 'amends' | 'amended by';
/** The clauses after the state, in the order they must come. */
const CLAUSES: Relation[] = ['supersedes', 'amends', 'amended by'];
const STATES = ['accepted', 'proposed', 'rejected'];
const LINK = /^\[(\d{4})\]\(([^)\s]+)\)$/;
/** A status written some other way (`**Status.**`, `Date: … Status: …`, `Superseded by …`) anywhere else. */
const OTHER_STATUS = /^\W*(Status\W*[:.]|Superseded\b|Supersedes\b)|\bStatus: /;

interface Status {
  state: string;
  links: Map<Relation, string[]>;
  problems: string[];
}

/** `[0013](0013-x.md)`, `[a](…) and [b](…)` or `[a](…), [b](…) and [c](…)`: the numbers, or why not. */
function linkList(text: string): { numbers: string[]; problems: string[] } {
  const parts = text.split(/, | and /);
  const joined = parts.length === 1 ? text : `${parts.slice(0, -1).join(', ')} and ${parts.at(-1)}`;
  if (joined !== text) return { numbers: [], problems: [`links not joined as "[a](…), [b](…) and [c](…)": ${text}`] };
  const problems: string[] = [];
  const numbers = parts.map((part) => {
    const m = LINK.exec(part);
    if (!m) {
      problems.push(`not a link to a record: ${part}`);
      return '';
    }
    const [, number, target] = m;
    if (!FILES.includes(target!)) problems.push(`links to ${target}, which is not a record in ${DIR}`);
    else if (!target!.startsWith(`${number}-`)) problems.push(`says ${number} but links to ${target}`);
    return number!;
  });
  return { numbers, problems };
}

/** `Status: <state>[; supersedes …][; amends …][; amended by …]`, a state being accepted, proposed, rejected or `superseded by …`. */
function parseStatus(line: string): Status | undefined {
  if (!line.startsWith('Status: ')) return undefined;
  const [first, ...rest] = line.slice('Status: '.length).split('; ');
  const status: Status = { state: first!, links: new Map(), problems: [] };
  const add = (relation: Relation, list: string) => {
    const { numbers, problems } = linkList(list);
    status.links.set(relation, numbers);
    status.problems.push(...problems);
  };
  if (first!.startsWith('superseded by ')) {
    status.state = 'superseded';
    add('superseded by', first!.slice('superseded by '.length));
  } else if (!STATES.includes(first!)) status.problems.push(`unknown state "${first}"`);
  let next = 0;
  for (const clause of rest) {
    const at = CLAUSES.findIndex((c, i) => i >= next && clause.startsWith(`${c} `));
    if (at < 0) {
      status.problems.push(`"${clause}": after the state come ${CLAUSES.join(', ')}, in that order, once each`);
      continue;
    }
    add(CLAUSES[at]!, clause.slice(CLAUSES[at]!.length + 1));
    next = at + 1;
  }
  return status;
}

interface Decision {
  file: string;
  number: string;
  title: string;
  statusLine: string;
  status: Status | undefined;
  problems: string[];
}

const RECORDS: Decision[] = FILES.map((file) => {
  const lines = read(`${DIR}/${file}`).split('\n');
  const number = file.slice(0, 4);
  const heading = /^# (\d{4}) (\S.*)$/.exec(lines[0]!);
  const problems: string[] = [];
  if (!heading) problems.push(`its first line is not "# NNNN Title": ${lines[0]}`);
  else if (heading[1] !== number) problems.push(`its heading says ${heading[1]}, its file name ${number}`);
  const at = lines.findIndex((l, i) => i > 0 && l.trim() !== '');
  const statusLine = lines[at] ?? '';
  const status = parseStatus(statusLine);
  if (lines[1] !== '' || !status)
    problems.push(`the line after the heading and a blank line is not "Status: …": ${statusLine}`);
  const others = lines.filter((l, i) => i !== at && OTHER_STATUS.test(l));
  if (others.length > 0) problems.push(`more than one status line: ${others.join(' | ')}`);
  return {
    file,
    number,
    title: heading?.[2] ?? '',
    statusLine,
    status,
    problems: [...problems, ...(status?.problems ?? [])],
  };
});
const byNumber = new Map(RECORDS.map((r) => [r.number, r]));
const linked = (r: Decision, relation: Relation): string[] => r.status?.links.get(relation) ?? [];

/** An index row as read: its cells, or only its line when it is not in the form. */
type Row = { number: string; file: string; title: string; status: string; line: string } | { line: string };

/** The index's rows: `| [NNNN](file) | title | status |`. */
const ROWS = read(INDEX)
  .split('\n')
  .filter((l) => /^\|\s*\[/.test(l))
  .map((l): Row => {
    const cells = /^\| \[(\d{4})\]\(([^)]+)\) \| (.+) \| (.+) \|$/.exec(l);
    return cells ? { number: cells[1]!, file: cells[2]!, title: cells[3]!, status: cells[4]!, line: l } : { line: l };
  });

describe(`the decision records in ${DIR}`, () => {
  it('are found (is the file pattern still right?)', () => {
    expect(FILES.length).toBeGreaterThan(50);
    expect(RECORDS.filter((r) => r.status).length).toBeGreaterThan(50);
  });

  it('each have one heading "# NNNN Title" and, after one blank line, one status line of the one format', () => {
    expect(RECORDS.filter((r) => r.problems.length > 0).map((r) => `${r.file}: ${r.problems.join('; ')}`)).toEqual([]);
  });

  it('have distinct numbers', () => {
    expect(RECORDS.map((r) => r.number).filter((n, i, all) => all.indexOf(n) !== i)).toEqual([]);
  });

  it('point back and forward in time: a record supersedes or amends earlier ones, and is replaced by later ones', () => {
    const wrong = RECORDS.flatMap((r) =>
      [...(r.status?.links ?? [])].flatMap(([relation, numbers]) =>
        numbers
          .filter((n) => (relation === 'supersedes' || relation === 'amends' ? n >= r.number : n <= r.number))
          .map((n) => `${r.number} ${relation} ${n}`),
      ),
    );
    expect(wrong).toEqual([]);
  });

  it('say both sides of a replacement or a change: "superseded by" and "amended by" are answered by "supersedes" or "amends"', () => {
    const missing: string[] = [];
    const expectIn = (from: Decision, to: string, relations: Relation[], said: string) => {
      const other = byNumber.get(to);
      if (other && !relations.some((rel) => linked(other, rel).includes(from.number)))
        missing.push(
          `${from.number} says "${said} ${to}", but ${to} does not say ${relations.map((rel) => `"${rel} ${from.number}"`).join(' or ')}`,
        );
    };
    for (const r of RECORDS) {
      for (const n of linked(r, 'superseded by')) expectIn(r, n, ['supersedes', 'amends'], 'superseded by');
      for (const n of linked(r, 'supersedes')) expectIn(r, n, ['superseded by'], 'supersedes');
      for (const n of linked(r, 'amends')) expectIn(r, n, ['amended by', 'superseded by'], 'amends');
      for (const n of linked(r, 'amended by')) expectIn(r, n, ['amends'], 'amended by');
    }
    expect(missing).toEqual([]);
  });
});

describe(`the index, ${INDEX}`, () => {
  it('has one row per record, in the form "| [NNNN](file) | title | status |"', () => {
    expect(ROWS.filter((r) => !('number' in r)).map((r) => r.line)).toEqual([]);
    const listed = ROWS.flatMap((r) => ('number' in r ? [r.number] : []));
    expect({
      'records missing from the index': RECORDS.map((r) => r.number).filter((n) => !listed.includes(n)),
      'rows naming no record': listed.filter((n) => !byNumber.has(n)),
      'rows listed twice': listed.filter((n, i) => listed.indexOf(n) !== i),
    }).toEqual({ 'records missing from the index': [], 'rows naming no record': [], 'rows listed twice': [] });
  });

  it('lists them by number', () => {
    const listed = ROWS.flatMap((r) => ('number' in r ? [r.number] : []));
    expect(listed.flatMap((n, i) => (i > 0 && n <= listed[i - 1]! ? [`${n} after ${listed[i - 1]}`] : []))).toEqual([]);
  });

  it("gives each record's file, title and status as the record does", () => {
    const differ = ROWS.flatMap((row) => {
      if (!('number' in row)) return [];
      const r = byNumber.get(row.number);
      if (!r) return [];
      const said = { file: row.file, title: row.title, status: `Status: ${row.status}` };
      const is = { file: r.file, title: r.title, status: r.statusLine };
      return (['file', 'title', 'status'] as const)
        .filter((k) => said[k] !== is[k])
        .map((k) => `${r.number}'s ${k}: the index says "${said[k]}", the record "${is[k]}"`);
    });
    expect(differ).toEqual([]);
  });
});
