import { readdirSync } from 'node:fs';
import path from 'node:path';
import { streamTopics } from '../../libs/kit/src/events/stream';
import { ROOT, read, sourcesUnder } from './tree';

// docs/architecture.md against the code, both ways: what the page lists between its
// `<!-- check:<name> -->` and `<!-- /check:<name> -->` markers (and its flowchart) is what the code
// has, no more and no less. A failure names what is missing, and where.

const DOC_PATH = 'docs/architecture.md';
const dirsIn = (dir: string) =>
  readdirSync(path.join(ROOT, dir), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name);
/** The gRPC services, as the manifest lists them (the gateway is the http process). */
const SERVICES = (
  JSON.parse(read('services/manifest.json')) as { processes: { name: string; protocol: string }[] }
).processes
  .filter((p) => p.protocol === 'grpc')
  .map((p) => p.name);
const PROCESSES = ['gateway', ...SERVICES];
const srcOf = (process: string) => (process === 'gateway' ? 'services/gateway/src' : `services/${process}/src`);

const DOC = read(DOC_PATH);
/** The text between a check's markers. */
const block = (name: string): string => {
  const m = new RegExp(`<!-- check:${name} -->([\\s\\S]*?)<!-- /check:${name} -->`).exec(DOC);
  if (!m) throw new Error(`${DOC_PATH} has no <!-- check:${name} --> … <!-- /check:${name} --> block`);
  return m[1]!;
};
/** A markdown table's body rows, as trimmed cells. */
const rows = (md: string): string[][] =>
  md
    .split('\n')
    .filter((l) => l.startsWith('|') && !/^\|\s*-/.test(l))
    .slice(1)
    .map((l) =>
      l
        .split('|')
        .slice(1, -1)
        .map((c) => c.trim()),
    );
const ticked = (text: string) => [...text.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
const FLOWCHART = /```mermaid\n(flowchart[\s\S]*?)```/.exec(DOC)?.[1] ?? '';

/** Both directions at once; each list says what is missing where. */
function expectSame(what: string, inCode: string[], inDocs: string[]): void {
  if (inCode.length === 0 || inDocs.length === 0)
    throw new Error(`found no ${what} in ${inCode.length === 0 ? 'the code' : DOC_PATH}: is the parsing still right?`);
  const code = new Set(inCode);
  const docs = new Set(inDocs);
  expect({
    [`${what} in the code, missing from ${DOC_PATH}`]: [...code].filter((x) => !docs.has(x)).sort(),
    [`${what} in ${DOC_PATH}, not in the code`]: [...docs].filter((x) => !code.has(x)).sort(),
  }).toEqual({
    [`${what} in the code, missing from ${DOC_PATH}`]: [],
    [`${what} in ${DOC_PATH}, not in the code`]: [],
  });
}

describe(`${DOC_PATH} says what the code has`, () => {
  it('names every process (services/* but the kit, and the gateway) in its process table, and no other', () => {
    expectSame(
      'processes',
      PROCESSES,
      rows(block('processes')).map((r) => r[0]!),
    );
  });

  it('draws every process in its flowchart, and no other', () => {
    const drawn = [...FLOWCHART.matchAll(/\b(\w+)\[(?:(\w+) service|Express gateway)\b/g)].map((m) =>
      m[2] === undefined ? 'gateway' : m[1] === m[2] ? m[2] : `${m[1]} (labelled ${m[2]})`,
    );
    expectSame('processes drawn', PROCESSES, drawn);
  });

  it("draws every process's gRPC clients as gRPC edges of its flowchart, and no other", () => {
    // In the code: the callees a process's config declares (`callees`, a selection of @voiceapi/proto's grpcCallees).
    const inCode = PROCESSES.flatMap((from) => {
      // eslint-disable-next-line @typescript-eslint/no-require-imports -- each process's config module, by path
      const { callees } = require(path.join(ROOT, srcOf(from), 'config.ts')) as {
        callees?: Record<string, { name: string }>;
      };
      return Object.values(callees ?? {}).map((c) => `${from} → ${c.name}`);
    });
    // In the flowchart: `a -- "… gRPC …" --> b` (or `a -- gRPC --> b`), node `gw` being the gateway.
    const node = (id: string) => (id === 'gw' ? 'gateway' : id);
    const drawn = [...FLOWCHART.matchAll(/^\s*(\w+)(?:\[[^\]\n]*\])?\s+--\s+(?:"([^"\n]*)"|(\S+))\s+-->\s+(\w+)/gm)]
      .filter((m) => /\bgRPC\b/.test(m[2] ?? m[3]!))
      .map((m) => `${node(m[1]!)} → ${node(m[4]!)}`);
    expectSame('gRPC calls', inCode, drawn);
  });

  it('lists every gateway route folder (services/gateway/src/routes/<area>) in the request path, and no other', () => {
    const listed = [...block('route-areas').matchAll(/^- `([\w-]+)\/`/gm)].map((m) => m[1]!);
    expectSame('route areas', dirsIn('services/gateway/src/routes'), listed);
  });

  it('lists every Kafka topic the code uses in the events table, and no other', () => {
    // A topic is named by its envelope (`<Name>Event` in proto/voiceapi/events/v1/, the kit's
    // streamOf): the topics the code uses are those of the envelopes its sources name.
    const protoDir = 'proto/voiceapi/events/v1';
    const envelopes = readdirSync(path.join(ROOT, protoDir))
      .filter((f) => f.endsWith('.proto'))
      .flatMap((f) => [...read(`${protoDir}/${f}`).matchAll(/^message (\w+Event) \{/gm)].map((m) => m[1]!));
    const named = new Set(
      PROCESSES.flatMap((p) => sourcesUnder(srcOf(p))).flatMap((f) =>
        [...read(f).matchAll(/\b([A-Z]\w*Event)\b/g)].map((m) => m[1]!),
      ),
    );
    const inCode = envelopes
      .filter((e) => named.has(e))
      .map((e) => streamTopics({ $type: `voiceapi.events.v1.${e}` }).topic);
    const inTable = rows(block('topics')).flatMap((r) =>
      ticked(r[1] ?? '').filter((t) => /^[a-z][a-z0-9]*(\.[a-z0-9-]+)*\.v\d+$/.test(t)),
    );
    expectSame('topics', inCode, inTable);
  });

  it('lists every worker the processes start (kit `Worker`) in the workers table, and no other', () => {
    // In the code: each `new Worker({ … job: '<job>' … })`, by the process (or the kit) whose sources hold it.
    const inCode = [...PROCESSES, 'kit'].flatMap((p) =>
      sourcesUnder(p === 'kit' ? 'libs/kit/src' : srcOf(p)).flatMap((f) => {
        const src = read(f);
        return [...src.matchAll(/new Worker\(/g)].map(
          (m) =>
            `${p} ${/\bjob:\s*'([\w-]+)'/.exec(src.slice(m.index, m.index + 800))?.[1] ?? `<a worker in ${f} whose job is not a literal>`}`,
        );
      }),
    );
    // In the table: the first word of the process cell (`kit` for the kit's own), the job in backticks.
    const inTable = rows(block('workers')).map((r) => `${r[0]!.split(/\s/)[0]} ${ticked(r[1] ?? '')[0] ?? '<no job>'}`);
    expectSame('workers', inCode, inTable);
  });

  it('lists the use cases with a unit test beside them, and no other', () => {
    const inCode = SERVICES.flatMap((s) =>
      dirsIn(`services/${s}/src`).includes('usecases')
        ? readdirSync(path.join(ROOT, `services/${s}/src/usecases`))
            .filter((f) => f.endsWith('.test.ts'))
            .map((f) => `${s}: ${f.replace(/\.test\.ts$/, '')}`)
        : [],
    );
    const listed = [...block('tested-usecases').matchAll(/^- (\w+): (.+)$/gm)].flatMap((m) =>
      ticked(m[2]!).map((u) => `${m[1]}: ${u}`),
    );
    expectSame('unit-tested use cases', inCode, listed);
  });
});
