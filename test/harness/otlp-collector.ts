import { createServer, type Server } from 'node:http';
import { BinaryReader } from '@bufbuild/protobuf/wire';

/**
 * An OTLP/HTTP receiver on loopback for tests: what every process sends to
 * OTEL_EXPORTER_OTLP_ENDPOINT (the kit's exporters speak protobuf), decoded into the few fields a
 * test reads: spans (who, kind, parent and links, the RPC or topic) and counter points. The OTLP
 * messages are read field by field with @bufbuild/protobuf's wire reader (the field numbers are
 * opentelemetry-proto's, stable since 1.0); fields not read are skipped.
 */
export interface CollectedSpan {
  /** The resource's `service.name`. */
  service: string;
  spanId: string;
  parentSpanId: string;
  /** Span ids this span links to (a Kafka batch's process span links to each message's send span). */
  links: string[];
  name: string;
  /** OTLP's SpanKind: 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, string | number | boolean>;
}

export interface CollectedPoint {
  service: string;
  metric: string;
  attributes: Record<string, string | number | boolean>;
  value: number;
}

export const SPAN_KIND = { server: 2, client: 3, producer: 4, consumer: 5 } as const;

type Fields = Record<number, (r: BinaryReader) => void>;

/** Reads a length-delimited message's fields, giving each wanted one to its handler and skipping the rest. */
function read(bytes: Uint8Array, fields: Fields): void {
  const r = new BinaryReader(bytes);
  while (r.pos < r.len) {
    const [no, wire] = r.tag();
    const handle = fields[no];
    if (handle) handle(r);
    else r.skip(wire, no);
  }
}

const hex = (b: Uint8Array) => Buffer.from(b).toString('hex');

function anyValue(bytes: Uint8Array): string | number | boolean {
  let v: string | number | boolean = '';
  read(bytes, {
    1: (r) => (v = r.string()),
    2: (r) => (v = r.bool()),
    3: (r) => (v = Number(r.int64())),
    4: (r) => (v = r.double()),
  });
  return v;
}

function keyValues(into: Record<string, string | number | boolean>): (r: BinaryReader) => void {
  return (r) => {
    let key = '';
    let value: string | number | boolean = '';
    read(r.bytes(), { 1: (x) => (key = x.string()), 2: (x) => (value = anyValue(x.bytes())) });
    into[key] = value;
  };
}

function serviceOf(resource: Uint8Array): string {
  const attributes: Record<string, string | number | boolean> = {};
  read(resource, { 1: keyValues(attributes) });
  return String(attributes['service.name'] ?? 'unknown');
}

/**
 * Each resource's scopes in an export request (traces and metrics share the frame: field 1 a
 * resource's block, in it 1 the resource and 2 a scope's block), with the resource's service.
 */
function eachScope(body: Uint8Array, visit: (service: string, scope: Uint8Array) => void): void {
  read(body, {
    1: (r) => {
      let service = 'unknown';
      const scopes: Uint8Array[] = [];
      read(r.bytes(), { 1: (x) => (service = serviceOf(x.bytes())), 2: (x) => scopes.push(x.bytes()) });
      for (const scope of scopes) visit(service, scope);
    },
  });
}

/** ExportTraceServiceRequest → spans. */
export function decodeSpans(body: Uint8Array): CollectedSpan[] {
  const out: CollectedSpan[] = [];
  eachScope(body, (service, scope) =>
    read(scope, {
      2: (x) => {
        const span: CollectedSpan = {
          service,
          spanId: '',
          parentSpanId: '',
          links: [],
          name: '',
          kind: 0,
          attributes: {},
        };
        read(x.bytes(), {
          2: (y) => (span.spanId = hex(y.bytes())),
          4: (y) => (span.parentSpanId = hex(y.bytes())),
          5: (y) => (span.name = y.string()),
          6: (y) => (span.kind = y.int32()),
          9: keyValues(span.attributes),
          13: (y) => read(y.bytes(), { 2: (z) => span.links.push(hex(z.bytes())) }),
        });
        out.push(span);
      },
    }),
  );
  return out;
}

/** ExportMetricsServiceRequest → the points of its sums (counters); other kinds are skipped. */
export function decodeCounterPoints(body: Uint8Array): CollectedPoint[] {
  const out: CollectedPoint[] = [];
  eachScope(body, (service, scope) =>
    read(scope, {
      2: (x) => {
        let metric = '';
        let sum: Uint8Array | undefined;
        read(x.bytes(), { 1: (y) => (metric = y.string()), 7: (y) => (sum = y.bytes()) });
        if (!sum) return;
        read(sum, {
          1: (y) => {
            const point: CollectedPoint = { service, metric, attributes: {}, value: 0 };
            read(y.bytes(), {
              4: (z) => (point.value = z.double()),
              6: (z) => (point.value = Number(z.sfixed64())),
              7: keyValues(point.attributes),
            });
            out.push(point);
          },
        });
      },
    }),
  );
  return out;
}

export interface OtlpCollector {
  /** OTEL_EXPORTER_OTLP_ENDPOINT for the processes. */
  endpoint: string;
  spans: CollectedSpan[];
  /** Every counter point received, in arrival order (cumulative: the last per series is its total). */
  points: CollectedPoint[];
  /** Forgets the spans received so far (counter points are cumulative: a window compares them, see `fallbacksBetween`). */
  clearSpans(): void;
  stop(): Promise<void>;
}

export async function startOtlpCollector(): Promise<OtlpCollector> {
  const collector: OtlpCollector = {
    endpoint: '',
    spans: [],
    points: [],
    clearSpans: () => {
      collector.spans.length = 0;
    },
    stop: () => new Promise((resolve) => server.close(() => resolve())),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = new Uint8Array(Buffer.concat(chunks));
      try {
        if (req.url === '/v1/traces') collector.spans.push(...decodeSpans(body));
        else if (req.url === '/v1/metrics') collector.points.push(...decodeCounterPoints(body));
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      } catch (err) {
        res.writeHead(400).end(String(err));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  collector.endpoint = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  return collector;
}
