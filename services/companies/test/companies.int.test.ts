import { credentials, makeGenericClientConstructor } from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { DomainError } from '@voiceapi/kit/errors';
import { createPromiseClient, type CallContext } from '@voiceapi/kit/grpc';
import { voiceapi } from '@voiceapi/proto';
import { randomBytes } from 'node:crypto';
import mongoose from 'mongoose';
import { startCompanies } from '../src/main';

// The companies service in-process against the harness's real MongoDB-compatible server,
// called over real gRPC through the kit's client.
describe('companies service (gRPC + MongoDB)', () => {
  const db = `companies_it_${randomBytes(4).toString('hex')}`;
  let svc: Awaited<ReturnType<typeof startCompanies>>;
  let client: ReturnType<typeof createPromiseClient<typeof voiceapi.companies.v1.CompaniesServiceService>>;
  const tenantA: CallContext = { tenantId: 'tenant-a', keyMode: 'live', requestId: 'r1' };
  const tenantB: CallContext = { tenantId: 'tenant-b', keyMode: 'live' };

  beforeAll(async () => {
    svc = await startCompanies({
      MONGO_URL: process.env.MONGO_URL,
      KAFKA_BROKERS: process.env.KAFKA_BROKERS,
      MONGO_DB: db,
      GRPC_PORT: '0',
      LOG_LEVEL: 'silent',
    });
    client = createPromiseClient(voiceapi.companies.v1.CompaniesServiceService, `127.0.0.1:${svc.port}`, {
      timeoutMs: 5_000,
    });
  });
  afterAll(async () => {
    client.close();
    await svc.lifecycle.stop();
  });

  const rejection = async (p: Promise<unknown>): Promise<DomainError> => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    if (!(err instanceof DomainError)) throw new Error(`expected a DomainError, got ${String(err)}`);
    return err;
  };

  it('creates, reads, updates, lists and deletes within one tenant', async () => {
    const { company } = await client.createCompany(
      { fields: { name: 'Sunrise Clinic', countryIso: 'US', businessHours: { mon: ['09:00-17:00'] } } },
      tenantA,
    );
    expect(company?.name).toBe('Sunrise Clinic');
    expect(company?.businessHours).toEqual({ mon: ['09:00-17:00'] });
    const id = company!.id;

    const updated = await client.updateCompany({ id, fields: { industry: 'health' }, clearFields: [] }, tenantA);
    expect(updated.company).toMatchObject({ name: 'Sunrise Clinic', industry: 'health', countryIso: 'US' });
    expect(updated.company!.updateTime!.getTime()).toBeGreaterThanOrEqual(company!.createTime!.getTime());

    const listed = await client.listCompanies({ page: { page: 1, limit: 10 } }, tenantA);
    expect(listed.companies.map((c) => c.id)).toContain(id);
    expect(listed.page?.total).toBe(listed.companies.length);

    await client.deleteCompany({ id }, tenantA);
    expect((await rejection(client.getCompany({ id }, tenantA))).reasonCode).toBe('not_found');
  });

  it("treats another tenant's company as not found for every operation", async () => {
    const { company } = await client.createCompany({ fields: { name: 'Private' } }, tenantA);
    const id = company!.id;
    expect((await rejection(client.getCompany({ id }, tenantB))).reasonCode).toBe('not_found');
    expect(
      (await rejection(client.updateCompany({ id, fields: { name: 'stolen' }, clearFields: [] }, tenantB))).reasonCode,
    ).toBe('not_found');
    expect((await rejection(client.deleteCompany({ id }, tenantB))).reasonCode).toBe('not_found');
    const listB = await client.listCompanies({ page: { page: 1, limit: 100 } }, tenantB);
    expect(listB.companies.map((c) => c.id)).not.toContain(id);
    expect((await client.getCompany({ id }, tenantA)).company?.name).toBe('Private');
  });

  it('refuses a call without a tenant, and one without a key mode instead of assuming live', async () => {
    expect((await rejection(client.listCompanies({}, {}))).reasonCode).toBe('unauthorized');
    const noMode = await rejection(client.createCompany({ fields: { name: 'No mode' } }, { tenantId: 'tenant-a' }));
    expect({ reason: noMode.reasonCode, message: noMode.message }).toEqual({
      reason: 'unauthorized',
      message: expect.stringMatching(/key mode/),
    });
  });

  it('removes the fields an update names, never the name, and never a field it also sets', async () => {
    const { company } = await client.createCompany(
      { fields: { name: 'Clearable', mobile: '+14155550100', website: 'https://a.example' } },
      tenantA,
    );
    const id = company!.id;
    const cleared = await client.updateCompany(
      { id, fields: { industry: 'health' }, clearFields: ['mobile', 'website'] },
      tenantA,
    );
    expect(cleared.company).toMatchObject({
      name: 'Clearable',
      industry: 'health',
      mobile: undefined,
      website: undefined,
    });
    expect((await rejection(client.updateCompany({ id, fields: {}, clearFields: ['name'] }, tenantA))).reasonCode).toBe(
      'validation_error',
    );
    expect(
      (await rejection(client.updateCompany({ id, fields: { mobile: '+1 555' }, clearFields: ['mobile'] }, tenantA)))
        .reasonCode,
    ).toBe('validation_error');
  });

  it('answers not_found for ids that are not ids', async () => {
    expect((await rejection(client.getCompany({ id: 'not-an-id' }, tenantA))).reasonCode).toBe('not_found');
  });

  it('never returns omniChannelSettings, even after an update', async () => {
    const { company } = await client.createCompany({ fields: { name: 'With secrets' } }, tenantA);
    // The dashboard stores credentials directly on the record; simulate that.
    const conn = await mongoose.createConnection(process.env.MONGO_URL!, { dbName: db }).asPromise();
    try {
      await conn
        .collection('companies')
        .updateOne(
          { _id: new mongoose.Types.ObjectId(company!.id) },
          { $set: { omniChannelSettings: { smtpPassword: 'hunter2', whatsappToken: 'wa-secret' } } },
        );
      const answers = [
        await client.getCompany({ id: company!.id }, tenantA),
        await client.updateCompany({ id: company!.id, fields: { description: 'x' }, clearFields: [] }, tenantA),
        await client.listCompanies({ page: { page: 1, limit: 100 } }, tenantA),
        await client.getLatestCompany({}, tenantA),
      ];
      const text = JSON.stringify(answers);
      expect(text).not.toContain('hunter2');
      expect(text).not.toContain('wa-secret');
      expect(text).not.toContain('omniChannelSettings');
      const stored = await conn.collection('companies').findOne({ _id: new mongoose.Types.ObjectId(company!.id) });
      expect(stored?.omniChannelSettings).toEqual({ smtpPassword: 'hunter2', whatsappToken: 'wa-secret' });
    } finally {
      await conn.close();
    }
  });

  it('pages newest first', async () => {
    const tenant: CallContext = { tenantId: `pager-${randomBytes(3).toString('hex')}`, keyMode: 'sandbox' };
    for (const name of ['first', 'second', 'third']) await client.createCompany({ fields: { name } }, tenant);
    const page1 = await client.listCompanies({ page: { page: 1, limit: 2 } }, tenant);
    const page2 = await client.listCompanies({ page: { page: 2, limit: 2 } }, tenant);
    expect(page1.companies.map((c) => c.name)).toEqual(['third', 'second']);
    expect(page2.companies.map((c) => c.name)).toEqual(['first']);
    expect(page1.page).toMatchObject({ total: 3, hasMore: true });
    expect(page2.page).toMatchObject({ total: 3, hasMore: false });
    expect((await client.getLatestCompany({}, tenant)).company?.name).toBe('third');
  });

  it('answers the standard gRPC health check as SERVING', async () => {
    const Health = makeGenericClientConstructor(healthService, 'Health');
    const health = new Health(`127.0.0.1:${svc.port}`, credentials.createInsecure()) as unknown as {
      check(req: { service: string }, cb: (err: Error | null, res: { status: string }) => void): void;
      close(): void;
    };
    const res = await new Promise<{ status: string }>((resolve, reject) =>
      health.check({ service: 'voiceapi.companies.v1.CompaniesService' }, (err, r) => (err ? reject(err) : resolve(r))),
    );
    health.close();
    expect(res.status).toBe('SERVING');
  });
});
