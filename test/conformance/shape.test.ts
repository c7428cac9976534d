import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { reasonCodesOf, type ReasonEnum } from '@voiceapi/kit/errors';
import { type QueryShape } from '@voiceapi/kit/mongo';
import { unservedShapes } from '../../libs/kit/test/unserved-shapes';
import { voiceapi } from '@voiceapi/proto';
import { CONTRACT_REASONS, gatewayReasons, HTTP_STATUS } from '../../services/gateway/src/http/reasons';
import { ROOT, read, sourcesUnder } from './tree';

// What the architecture document promises of every service, checked on the code itself (issue 22
// adds the service-shape checks as services move into the shape): the files it names exist, every
// reason code of the contract has its HTTP status in the gateway's one table (so none reaches a
// tenant as an unexplained 500), and every store's declared queries have indexes.

/** The gRPC services, as the manifest lists them (the gateway is the http process). */
const SERVICES = (
  JSON.parse(read('services/manifest.json')) as { processes: { name: string; protocol: string }[] }
).processes
  .filter((p) => p.protocol === 'grpc')
  .map((p) => p.name);

describe('the architecture document', () => {
  it('names only files that exist', () => {
    const doc = read('docs/architecture.md');
    // Paths in backticks with a folder and an extension; tables name them relative to the kit,
    // the gateway or a service folder, so each is looked for there too.
    const named = [
      ...new Set(
        [...doc.matchAll(/`([A-Za-z0-9_.-][A-Za-z0-9_./<>-]*\/[A-Za-z0-9_.-]+\.[a-z]{2,5})`/g)].map((m) => m[1]!),
      ),
    ].filter((p) => !p.includes('<'));
    const bases = [
      '.',
      'libs/kit/src',
      'services/gateway/src',
      'services/gateway/src/routes',
      ...SERVICES.flatMap((s) => [`services/${s}`, `services/${s}/src`]),
    ];
    const missing = named.filter((p) => !bases.some((b) => existsSync(path.join(ROOT, b, p))));
    expect(named.length).toBeGreaterThan(30);
    expect(missing).toEqual([]);
  });
});

describe('reason codes', () => {
  // Every `<Service>Reason` enum the contract (proto/) defines, found in the generated code.
  const protoEnums = Object.entries(
    voiceapi as unknown as Record<string, Record<string, Record<string, unknown>>>,
  ).flatMap(([pkg, versions]) =>
    Object.values(versions).flatMap((v) =>
      Object.entries(v)
        .filter(([name]) => /^[A-Z]\w*Reason$/.test(name))
        .map(([name, e]) => ({ pkg, name, e: e as ReasonEnum })),
    ),
  );

  it('every code of the contract has an HTTP status in the gateway', () => {
    expect(protoEnums.map((p) => p.name).sort()).toEqual(
      Object.values(CONTRACT_REASONS)
        .map((e) => protoEnums.find((p) => p.e === e)?.name)
        .sort(),
    );
    const codes = protoEnums.flatMap(({ name, e }) => reasonCodesOf(e).map((code) => ({ name, code })));
    expect(codes.length).toBeGreaterThan(25);
    expect(codes.filter(({ code }) => !Object.hasOwn(HTTP_STATUS, code))).toEqual([]);
    // The gateway's own codes (they never leave it) have one too.
    expect(Object.keys(gatewayReasons.reasons).filter((code) => !Object.hasOwn(HTTP_STATUS, code))).toEqual([]);
  });

  it.each(SERVICES.filter((s) => existsSync(path.join(ROOT, `services/${s}/src/reasons.ts`))))(
    '%s: declares its reasons from the contract',
    (service) => {
      const src = read(`services/${service}/src/reasons.ts`);
      expect(/contractReasons\(/.test(src) && !/defineReasons\(/.test(src)).toBe(true);
    },
  );
});

describe('stores', () => {
  // Every store module of the gateway and the services: each `<name>QueryShapes` it exports is
  // checked against the indexes of the `<name>Schema` beside it (the runtime query check under
  // test catches a query sent without a declaration; this catches a declaration without an index).
  const storeFiles = ['services/gateway/src/store', ...SERVICES.map((s) => `services/${s}/src/store`)]
    .filter((d) => existsSync(path.join(ROOT, d)))
    .flatMap((d) =>
      readdirSync(path.join(ROOT, d))
        .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
        .map((f) => `${d}/${f}`),
    );

  it.each(storeFiles)('%s: every declared query has an index that serves it', (file) => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports -- loads each store module by path, synchronously inside it.each
    const mod = require(path.join(ROOT, file)) as Record<string, unknown>;
    const declared = Object.keys(mod).filter((k) => k.endsWith('QueryShapes'));
    for (const name of declared) {
      const schema = mod[name.replace(/QueryShapes$/, 'Schema')] as Parameters<typeof unservedShapes>[0] | undefined;
      expect({ name, schema: schema !== undefined }).toEqual({ name, schema: true });
      expect({ name, unserved: unservedShapes(schema!, mod[name] as QueryShape[]) }).toEqual({ name, unserved: [] });
    }
  });
});

describe('tenant isolation in the stores', () => {
  const storeFiles = ['services/gateway/src/store', ...SERVICES.map((s) => `services/${s}/src/store`)]
    .filter((d) => existsSync(path.join(ROOT, d)))
    .flatMap((d) =>
      readdirSync(path.join(ROOT, d))
        .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
        .map((f) => `${d}/${f}`),
    );
  const WRAPPERS = /new TenantCollection\(|new TenantKeyed\(|platformModel\(/;

  // A raw model of a tenant's data is how a query forgets its tenant: every model a store makes
  // goes, in the statement that makes it, into a TenantCollection, a TenantKeyed (ids that are the
  // tenant's) or, for data no tenant owns, platformModel(model, why).
  it.each(storeFiles)('%s: reaches every collection through TenantCollection, TenantKeyed or platformModel', (file) => {
    const src = read(file);
    const makings = src.split(';').filter((st) => /\bconn\.model[<(]/.test(st));
    const bare = makings.filter((st) => !WRAPPERS.test(st));
    expect(bare.map((st) => st.trim().slice(0, 140))).toEqual([]);
    // Walking a whole collection goes through crossTenant(why) too.
    expect(/\b(pagesByPrimaryKey|allByPrimaryKey)\(/.test(src)).toBe(false);
  });
});

describe('announced writes', () => {
  // The gateway has no use cases of its own, but the same rule: events held by hand only in the kit.
  it('the gateway holds, releases and discards no event by hand', () => {
    expect(
      sourcesUnder('services/gateway/src', { tests: true }).filter((f) =>
        /\bhold:\s*true\b|\boutbox\.(release|discard)\(/.test(read(f)),
      ),
    ).toEqual([]);
  });
});

describe('announcements: one form in every service', () => {
  // events/publish.ts implements the service's port for announcing (declared in usecases/ports.ts)
  // with one factory over the kit's outbox; use cases speak only to the port, never to the adapter.
  const withPublish = SERVICES.filter((s) => existsSync(path.join(ROOT, `services/${s}/src/events/publish.ts`)));

  it.each(withPublish)('%s: events/publish.ts exports one factory returning a port of usecases/ports.ts', (service) => {
    const src = read(`services/${service}/src/events/publish.ts`);
    const exported = [
      ...src.matchAll(/^export\s+(?:async\s+)?(function|const|let|class|interface|type|enum)\s+(\w+)/gm),
      ...src.matchAll(/^export\s+(default|\{|\*)/gm),
    ].map((m) => m[0]);
    expect(exported).toHaveLength(1);
    const factory = /^export function (\w+Events)\([^)]*\): (\w+) \{/m.exec(src);
    expect({ factory: factory?.[1] }).toEqual({ factory: expect.stringMatching(/Events$/) });
    const port = factory![2]!;
    expect(new RegExp(`import type \\{[^}]*\\b${port}\\b[^}]*\\} from '\\.\\./usecases/ports'`).test(src)).toBe(true);
  });

  it.each(SERVICES)('%s: no use case imports the events adapter', (service) => {
    const dir = `services/${service}/src/usecases`;
    if (!existsSync(path.join(ROOT, dir))) return;
    // '../events', '../events/…' or deeper ('../../events/…'): the adapter, however reached.
    const importing = sourcesUnder(dir).filter((f) => /from '(\.\.\/)+events(\/[^']*)?'/.test(read(f)));
    expect(importing).toEqual([]);
  });
});

describe('background work', () => {
  // Every background job is the kit's Worker (lease, wake-ups, lag metric, clean stop): a timer
  // loop written by hand in a service or the gateway fails here. In-memory housekeeping that
  // touches no store is the one exception, each named with its reason.
  const IN_MEMORY_ONLY: Record<string, string> = {
    'services/gateway/src/http/rate-limit.ts': 'drops expired rate-limit windows from a map',
  };
  it('no service or the gateway runs a timer loop of its own', () => {
    const files = ['services/gateway/src', ...SERVICES.map((s) => `services/${s}/src`)].flatMap((d) => sourcesUnder(d));
    expect(files.length).toBeGreaterThan(100);
    const loops = files.filter((f) => /\bsetInterval\s*\(/.test(read(f)) && !Object.hasOwn(IN_MEMORY_ONLY, f));
    expect(loops).toEqual([]);
  });
});

describe('the shape of every service (services/companies is the model)', () => {
  const sourcesOf = (service: string) => sourcesUnder(`services/${service}/src`);

  it.each(SERVICES)('%s: has the files every service has', (service) => {
    const must = [
      'README.md',
      'src/main.ts',
      'src/config.ts',
      `src/grpc/${service}-server.ts`,
      'src/usecases/ports.ts',
    ];
    expect(must.filter((f) => !existsSync(path.join(ROOT, 'services', service, f)))).toEqual([]);
  });

  it.each(SERVICES)("%s: starts and stops through the kit's starter (openService, serveGrpc, runAsMain)", (service) => {
    const main = read(`services/${service}/src/main.ts`);
    const uses = ['openService(', 'serveGrpc(', 'runAsMain(', 'startEvents('].filter((f) => !main.includes(f));
    const byHand = ['new Lifecycle(', 'connectMongo(', 'startGrpcServer(', 'createLogger(', 'require.main'].filter(
      (f) => main.includes(f),
    );
    expect({ uses, byHand }).toEqual({ uses: [], byHand: [] });
  });

  it.each(SERVICES)(
    '%s: builds events only in events/publish.ts and handles them only in events/consume.ts',
    (service) => {
      const files = sourcesOf(service);
      const building = files.filter(
        (f) => /\beventRecord\(|\boutbox\.add\(/.test(read(f)) && !f.endsWith('/events/publish.ts'),
      );
      const handling = files.filter(
        (f) => /\.on\(\s*[A-Z]\w*Event\b/.test(read(f)) && !f.endsWith('/events/consume.ts'),
      );
      expect({ building, handling }).toEqual({ building: [], handling: [] });
    },
  );

  it.each(SERVICES)(
    "%s: announces a write only through the kit's announce, reached by its use cases through their ports",
    (service) => {
      // Holding, releasing and discarding events by hand is how an event escapes without its change
      // (decision 0117): use cases take a port (usecases/ports.ts), events/publish.ts implements it.
      const files = sourcesOf(service);
      const byHand = files.filter((f) => /\bhold:\s*true\b|\boutbox\.(release|discard)\(/.test(read(f)));
      const usecases = files.filter((f) => f.includes('/usecases/') && !f.endsWith('/ports.ts'));
      const bypassing = usecases.filter((f) => /\bOutbox\b|\.addRecords\(|\bannounceWith\(/.test(read(f)));
      expect({ byHand, bypassing }).toEqual({ byHand: [], bypassing: [] });
    },
  );

  it.each(SERVICES)(
    "%s: its use cases take the TenantScope its gRPC adapter made, never a caller's context",
    (service) => {
      const usecases = sourcesOf(service).filter((f) => f.includes('/usecases/'));
      expect(usecases.filter((f) => /\bCallContext\b|requireTenant\(ctx\)/.test(read(f)))).toEqual([]);
    },
  );

  it.each(SERVICES)(
    '%s: its gRPC adapter and its clients import no store (entity types live in domain/)',
    (service) => {
      const adapters = sourcesOf(service).filter((f) => /\/src\/(grpc|clients)\//.test(f));
      expect(adapters.filter((f) => /from '\.\.\/store\//.test(read(f)))).toEqual([]);
    },
  );

  it.each(SERVICES)(
    '%s: talks to other services only through clients/ (wiring/clients.ts makes the gRPC clients and hands them over)',
    (service) => {
      // The wiring calling a method of a gRPC client it made is an adapter written inline.
      const wiring = ['main.ts', 'wiring/clients.ts']
        .map((f) => `services/${service}/src/${f}`)
        .filter((f) => existsSync(path.join(ROOT, f)))
        .map(read)
        .join('\n');
      const made = [...wiring.matchAll(/const (\w+) = connectCallees\(/g)].map((m) => m[1]!);
      const inline = made.filter((c) => new RegExp(`\\b${c}\\.\\w+\\.(?!close\\b)\\w+\\(`).test(wiring));
      // Elsewhere, a call made as the tenant (contextOf) outside clients/ is one too.
      const elsewhere = sourcesOf(service).filter(
        (f) =>
          !f.includes('/clients/') &&
          !f.includes('/wiring/') &&
          !f.endsWith('/main.ts') &&
          /\bcontextOf\(/.test(read(f)),
      );
      expect({ inline, elsewhere }).toEqual({ inline: [], elsewhere: [] });
    },
  );
});
