import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { freePort } from '../harness/processes';
import { call, startSystem, tenantWithKey, type System } from '../harness/system';

// With OTEL_EXPORTER_OTLP_ENDPOINT set, both processes export spans and metrics over OTLP: one
// tenant request is one trace across the gateway and the companies service, and runtime metrics
// arrive with the resource that says where they came from.
describe('telemetry', () => {
  let sys: System;
  let collector: Server;
  const exports: { path: string; body: Buffer }[] = [];

  beforeAll(async () => {
    const port = await freePort();
    collector = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        exports.push({ path: req.url ?? '', body: Buffer.concat(chunks) });
        res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
      });
    });
    await new Promise<void>((r) => collector.listen(port, '127.0.0.1', r));
    const otel = {
      OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`,
      OTEL_BSP_SCHEDULE_DELAY: '200',
      OTEL_METRIC_EXPORT_INTERVAL: '1000',
    };
    sys = await startSystem({ gateways: 0 });
    // Restart companies with telemetry on, then a gateway with telemetry on.
    await sys.companies.stop();
    Object.assign(sys.env, { ...otel, OTEL_SERVICE_NAME: 'companies-under-test' });
    await sys.startCompanies();
    await sys.startGateway({ ...otel, OTEL_SERVICE_NAME: 'gateway-under-test' });
  });
  afterAll(async () => {
    await sys.stop();
    collector.close();
  });

  it('exports one trace spanning gateway and companies for a tenant request', async () => {
    const gw = sys.gateways[0]!.url;
    const { key } = await tenantWithKey(gw, { scopes: ['companies:read'] });
    const traceId = randomBytes(16);
    const res = await call(`${gw}/api/v1/companies`, {
      key,
      headers: { traceparent: `00-${traceId.toString('hex')}-${randomBytes(8).toString('hex')}-01` },
    });
    expect(res.status).toBe(200);

    const carries = (service: string) =>
      exports.some((e) => e.path === '/v1/traces' && e.body.includes(Buffer.from(service)) && e.body.includes(traceId));
    const until = Date.now() + 15_000;
    while (!(carries('gateway-under-test') && carries('companies-under-test')) && Date.now() < until) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(carries('gateway-under-test')).toBe(true);
    expect(carries('companies-under-test')).toBe(true);
  });

  it('exports runtime metrics with host and process resource attributes', async () => {
    const has = (e: { path: string; body: Buffer }, ...needles: string[]) =>
      e.path === '/v1/metrics' && needles.every((n) => e.body.includes(Buffer.from(n)));
    const wanted = ['companies-under-test', 'nodejs.eventloop', 'v8js.memory', 'host.name', 'process.pid'];
    const until = Date.now() + 15_000;
    while (!exports.some((e) => has(e, ...wanted)) && Date.now() < until) await new Promise((r) => setTimeout(r, 100));
    const found = wanted.filter((w) =>
      exports.some(
        (e) =>
          e.path === '/v1/metrics' &&
          e.body.includes(Buffer.from('companies-under-test')) &&
          e.body.includes(Buffer.from(w)),
      ),
    );
    expect(found).toEqual(wanted);
  });
});
