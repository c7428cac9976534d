import { Server, ServerCredentials, type UntypedServiceImplementation } from '@grpc/grpc-js';
import { voiceapi } from '@voiceapi/proto';
import { call, startSystem, tenantWithKey, type System } from '../harness/system';
import { freePort } from '../harness/processes';

const scopes = ['companies:read', 'companies:write'];

describe('faults behind the gateway', () => {
  let sys: System;
  let gw: string;
  let key: string;

  beforeAll(async () => {
    sys = await startSystem();
    gw = sys.gateways[0]!.url;
    // A generous rate limit: this suite is about the backend, not the edge.
    ({ key } = await tenantWithKey(gw, { scopes, rateLimitPerSecond: 100_000 }));
  });
  afterAll(() => sys.stop());

  it('answers 503 service_unavailable with Retry-After while the companies service is down, and recovers', async () => {
    await sys.companies.stop();
    const started = Date.now();
    const res = await call(`${gw}/api/v1/companies`, { key });
    expect(res.status).toBe(503);
    expect(res.body.reasonCode).toBe('service_unavailable');
    expect(res.headers.get('retry-after')).toBe('1');
    // The gateway waited for a ready backend up to its deadline (GRPC_DEADLINE_MS, 5 s), then said it is away.
    expect(Date.now() - started).toBeLessThan(7_000);
    // The edge keeps working without the backend.
    expect((await call(`${gw}/api/v1/ping`, { key })).status).toBe(200);

    await sys.startCompanies();
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      status = (await call(`${gw}/api/v1/companies`, { key })).status;
      if (status !== 200) await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(200);
  });

  it('loses no accepted write when the companies service restarts while writes flow', async () => {
    const accepted: string[] = [];
    const refused: number[] = [];
    let stop = false;
    const writer = (async () => {
      for (let i = 0; !stop && i < 2_000; i++) {
        const res = await call(`${gw}/api/v1/companies`, { key, body: { name: `flow-${i}` } });
        if (res.status === 201) accepted.push(res.body.company.id);
        else {
          refused.push(res.status);
          expect(res.body.reasonCode).toMatch(/^(service_unavailable|upstream_timeout)$/);
          await new Promise((r) => setTimeout(r, 20));
        }
      }
    })();
    await new Promise((r) => setTimeout(r, 500));
    await sys.companies.stop(); // SIGTERM: drain in-flight calls, then exit
    await sys.startCompanies();
    await new Promise((r) => setTimeout(r, 500));
    stop = true;
    await writer;

    expect(accepted.length).toBeGreaterThan(5);
    for (const status of refused) expect([503, 504]).toContain(status);
    // Every accepted write is readable (retrying while the gateway reconnects to the new process).
    for (const id of accepted) {
      let got = await call(`${gw}/api/v1/companies/${id}`, { key });
      for (let i = 0; i < 50 && got.status === 503; i++) {
        await new Promise((r) => setTimeout(r, 100));
        got = await call(`${gw}/api/v1/companies/${id}`, { key });
      }
      expect({ id, status: got.status }).toEqual({ id, status: 200 });
    }
  });
});

describe('a backing service that overruns its deadline', () => {
  let sys: System;
  let slow: Server;

  beforeAll(async () => {
    // A stand-in companies service that never answers in time (only the gRPC peer is faked;
    // MongoDB and Kafka are the real ones).
    slow = new Server();
    const hang: UntypedServiceImplementation = {};
    for (const method of Object.keys(voiceapi.companies.v1.CompaniesServiceService)) {
      hang[method] = (_call: unknown, cb: (err: null, res: unknown) => void) => setTimeout(() => cb(null, {}), 5_000);
    }
    slow.addService(voiceapi.companies.v1.CompaniesServiceService, hang);
    const port = await freePort();
    await new Promise<void>((resolve, reject) =>
      slow.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), (e) => (e ? reject(e) : resolve())),
    );
    sys = await startSystem({ gateways: 0 });
    await sys.startGateway({ COMPANIES_GRPC_ADDR: `127.0.0.1:${port}`, GRPC_DEADLINE_MS: '300' });
  });
  afterAll(async () => {
    await sys.stop();
    slow.forceShutdown();
  });

  it('answers 504 upstream_timeout at the deadline instead of hanging', async () => {
    const gw = sys.gateways[0]!.url;
    const { key } = await tenantWithKey(gw, { scopes });
    const started = Date.now();
    const res = await call(`${gw}/api/v1/companies`, { key });
    expect(res.status).toBe(504);
    expect(res.body.reasonCode).toBe('upstream_timeout');
    expect(Date.now() - started).toBeLessThan(3_000);
  });
});
