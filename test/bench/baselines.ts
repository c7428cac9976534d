/**
 * Reference servers for the edge benchmark, each run as its own process like the real ones:
 *   bare-http     Express answering a static JSON body (the floor for `GET /ping`)
 *   static-grpc   a gRPC CompaniesService answering a static company (no database)
 *   http-to-grpc  Express → one gRPC call (kit client) → static-grpc (the floor for a companies read)
 * Usage: tsx test/bench/baselines.ts <mode> <port> [grpc-target]
 */
import { Server, ServerCredentials } from '@grpc/grpc-js';
import { createPromiseClient } from '@voiceapi/kit/grpc';
import { voiceapi } from '@voiceapi/proto';
import express from 'express';

const [mode, portArg, target] = process.argv.slice(2);
const port = Number(portArg);
const company = { id: '665f1c2b9d3e4a0012345678', name: 'Static', createTime: new Date(), updateTime: new Date() };

async function main(): Promise<void> {
  if (mode === 'bare-http') {
    const app = express();
    app.get('/ping', (_req, res) => void res.json({ ok: true, tenantId: 't', keyId: 'k', mode: 'live', scopes: [] }));
    app.listen(port, '127.0.0.1');
  } else if (mode === 'static-grpc') {
    const server = new Server();
    const impl = { getCompany: (_c: unknown, cb: (e: null, r: unknown) => void) => cb(null, { company }) };
    server.addService(voiceapi.companies.v1.CompaniesServiceService, impl);
    server.bindAsync(`127.0.0.1:${port}`, ServerCredentials.createInsecure(), () => undefined);
  } else if (mode === 'http-to-grpc') {
    const client = createPromiseClient(voiceapi.companies.v1.CompaniesServiceService, target!, { timeoutMs: 5_000 });
    const app = express();
    app.get('/companies/:id', async (req, res) => {
      const r = await client.getCompany({ id: req.params.id }, { tenantId: 't' });
      res.json({ company: { ...r.company, createdAt: r.company?.createTime?.toISOString() } });
    });
    app.listen(port, '127.0.0.1');
  } else {
    throw new Error(`unknown mode ${mode}`);
  }
  process.stdout.write('ready\n');
}

void main();
