/**
 * The settings tables of docs/guides/configuration.md, generated from the processes' config schemas: each process
 * of services/manifest.json exports `configSchema` (a zod object) from `<workspace>/src/config.ts`, the settings
 * every process shares coming from the kit (libs/kit/src/config.ts). A setting's default and its description are the
 * schema's: the description given with `.describe(…)` (or `.meta({ description })`) on the field, before or after its
 * `.default(…)`, `.optional()` or `.transform(…)`: any layer of it is read. A setting without one stops the generator,
 * which names it. The gRPC address settings are described where the kit's `calleeAddresses` makes them.
 *
 *   node --import tsx tools/config-table.ts           rewrites the block between the guide's markers
 *   node --import tsx tools/config-table.ts --check   exits 1 when the block differs from the schemas
 *
 * Importing a config.ts starts nothing: it declares its schema, and the kit modules it loads declare theirs (a few
 * set process-wide options as they load: kafkajs's warning filter, mongoose's settings through the kit's index).
 * A default computed where the process runs (`INSTANCE_ID`'s host and pid) is shown by what it is made of.
 * test/conformance/config-table.test.ts compares the guide with `renderConfigTable()` and checks that every setting
 * has its description in its schema.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import path from 'node:path';

export const ROOT = path.resolve(__dirname, '..');
export const GUIDE = 'docs/guides/configuration.md';
export const START = '<!-- generated:config -->';
export const END = '<!-- /generated:config -->';
/** The heading of the table of settings every process has alike. */
export const EVERY_PROCESS = 'Every process';

/** What this reads of a zod 4 schema: its definition and its registered description. */
export interface ZodLike {
  readonly description?: string;
  readonly _zod: {
    readonly def: {
      readonly type: string;
      readonly innerType?: ZodLike;
      readonly in?: ZodLike;
      readonly out?: ZodLike;
      defaultValue?: unknown;
    };
  };
}
export interface Process {
  name: string;
  workspace: string;
  protocol: string;
}
export interface Setting {
  name: string;
  /** As the table shows it: a value in backticks, `required`, `unset` (optional) or `empty`. */
  default: string;
  description: string;
}

export const processes = (): Process[] =>
  (JSON.parse(readFileSync(path.join(ROOT, 'services/manifest.json'), 'utf8')) as { processes: Process[] }).processes;

/** Each process's config schema's fields, in the manifest's order. */
export function schemas(): Map<string, Record<string, ZodLike>> {
  const out = new Map<string, Record<string, ZodLike>>();
  for (const p of processes()) {
    const file = path.join(ROOT, p.workspace, 'src/config.ts');
    // The manifest names the files; under jest they must load through jest's own require (and transform).
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- see above
    const mod = require(file) as { configSchema?: { shape?: Record<string, ZodLike> } };
    if (!mod.configSchema?.shape)
      throw new Error(`${path.relative(ROOT, file)} exports no zod object \`configSchema\``);
    out.set(p.name, mod.configSchema.shape);
  }
  return out;
}

/** The wrappers a setting's schema is made of, outermost first (`.default`, `.optional`, a pipe's input). */
function layers(field: ZodLike): ZodLike[] {
  const out: ZodLike[] = [];
  for (let s: ZodLike | undefined = field; s;) {
    out.push(s);
    const def: ZodLike['_zod']['def'] = s._zod.def;
    s = ['default', 'prefault', 'optional', 'nullable', 'readonly', 'catch'].includes(def.type)
      ? def.innerType
      : def.type === 'pipe'
        ? def.in
        : undefined;
  }
  return out;
}

/**
 * A setting's description: the first found of its layers, outermost first, and of the output side of its pipes
 * (wherever in the chain `.describe(…)` was called); undefined when none has one.
 */
export function descriptionOf(field: ZodLike): string | undefined {
  const seen = new Set<ZodLike>();
  const queue: ZodLike[] = [field];
  for (let s = queue.shift(); s; s = queue.shift()) {
    if (seen.has(s)) continue;
    seen.add(s);
    if (s.description) return s.description;
    const def = s._zod.def;
    if (['default', 'prefault', 'optional', 'nullable', 'readonly', 'catch'].includes(def.type) && def.innerType)
      queue.push(def.innerType);
    if (def.type === 'pipe') queue.push(...[def.in, def.out].filter((x): x is ZodLike => x !== undefined));
  }
  return undefined;
}

/** Defaults computed where the process runs, shown by what they are made of. */
const COMPUTED: Record<string, [() => string, string]> = {
  INSTANCE_ID: [() => `${hostname()}-${process.pid}`, '`<host>-<pid>`'],
};

function defaultOf(name: string, field: ZodLike): string {
  for (const s of layers(field)) {
    const def = s._zod.def;
    if (def.type === 'optional') return 'unset';
    if (def.type !== 'default' && def.type !== 'prefault') continue;
    const value = def.defaultValue;
    const computed = COMPUTED[name];
    if (computed && value === computed[0]()) return computed[1];
    if (value === '') return 'empty';
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean')
      return `\`${String(value)}\``;
    return `\`${JSON.stringify(value)}\``;
  }
  return 'required';
}

/** Every process's settings, in its schema's order; throws naming every setting that has no description. */
export function configSettings(): Map<string, Setting[]> {
  const out = new Map<string, Setting[]>();
  const undescribed: string[] = [];
  for (const [proc, shape] of schemas()) {
    out.set(
      proc,
      Object.entries(shape).map(([name, field]) => {
        const description = descriptionOf(field);
        if (!description) undescribed.push(`${proc}.${name}`);
        return { name, default: defaultOf(name, field), description: description ?? '' } satisfies Setting;
      }),
    );
  }
  if (undescribed.length)
    throw new Error(
      `settings with no description (give the field in its config schema a .describe(…)): ${undescribed.join(', ')}`,
    );
  return out;
}

/** Groups whose settings alike in every member get a section of their own, before the processes'. */
const GROUPS: { title: string; member: (p: Process) => boolean }[] = [
  { title: EVERY_PROCESS, member: () => true },
  { title: 'Every gRPC service', member: (p) => p.protocol === 'grpc' },
];

/** The sections of the block: each group's settings alike in all its members, then each process's others. */
export function configSections(): [string, Setting[]][] {
  const all = configSettings();
  const placed = new Map<string, Set<string>>([...all.keys()].map((proc) => [proc, new Set<string>()]));
  const sections: [string, Setting[]][] = [];
  for (const group of GROUPS) {
    const members = processes().filter(group.member);
    if (members.length < 2) continue;
    const lists = members.map((p) => all.get(p.name) ?? []);
    const alike = (a: Setting, b: Setting | undefined) =>
      b !== undefined && a.default === b.default && a.description === b.description;
    const common = (lists[0] ?? []).filter(
      (s) =>
        members.every((p) => !placed.get(p.name)?.has(s.name)) &&
        lists.every((l) =>
          alike(
            s,
            l.find((x) => x.name === s.name),
          ),
        ),
    );
    if (!common.length) continue;
    sections.push([group.title, common]);
    for (const p of members) for (const s of common) placed.get(p.name)?.add(s.name);
  }
  for (const [proc, settings] of all) sections.push([proc, settings.filter((s) => !placed.get(proc)?.has(s.name))]);
  return sections;
}

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');

/** The guide's block, markers included. */
export function renderConfigTable(): string {
  const workspaces = new Map(processes().map((p) => [p.name, p.workspace]));
  const parts = [
    START,
    '<!-- Written by `node --import tsx tools/config-table.ts` from the config schemas: edit those, ' +
      'not this block. -->',
  ];
  for (const [section, settings] of configSections()) {
    parts.push('', `## ${section}`, '');
    const workspace = workspaces.get(section);
    if (workspace) {
      const readme = `${workspace}/README.md`;
      parts.push(`Schema: \`${workspace}/src/config.ts\`; more in [${readme}](../../${readme}).`, '');
    }
    parts.push('| setting | default | meaning |', '|---|---|---|');
    for (const s of settings) parts.push(`| \`${s.name}\` | ${cell(s.default)} | ${cell(s.description)} |`);
  }
  parts.push('', END);
  return parts.join('\n');
}

/** The guide with its block replaced by `block`. */
export function withBlock(text: string, block: string): string {
  const a = text.indexOf(START);
  const b = text.indexOf(END);
  if (a < 0 || b < a) throw new Error(`${GUIDE} has no ${START} … ${END} block`);
  return text.slice(0, a) + block + text.slice(b + END.length);
}

if (require.main === module) {
  const args = process.argv.slice(2);
  if (args.some((a) => a !== '--check')) {
    console.error('usage: config-table.ts [--check]');
    process.exit(2);
  }
  const file = path.join(ROOT, GUIDE);
  const text = readFileSync(file, 'utf8');
  const next = withBlock(text, renderConfigTable());
  if (args.includes('--check')) {
    if (next !== text) {
      console.log(
        `${GUIDE}: the settings tables differ from the schemas; run: node --import tsx tools/config-table.ts`,
      );
      process.exit(1);
    }
    console.log(`${GUIDE}: the settings tables are current`);
  } else if (next === text) console.log(`${GUIDE}: unchanged`);
  else {
    writeFileSync(file, next);
    console.log(`${GUIDE}: settings tables written`);
  }
}
