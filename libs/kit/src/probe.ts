/**
 * A one-shot liveness check for `helm test` and operators (in every image):
 *   node /app/node_modules/@voiceapi/kit/dist/probe.js grpc HOST:PORT | http URL
 * Exits 0 when SERVING / 2xx, else 1 with one line saying what it got (PROBE_TIMEOUT_MS, default 5 s).
 */
import { credentials, makeGenericClientConstructor, type ServiceError } from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';

const timeoutMs = Number(process.env.PROBE_TIMEOUT_MS ?? 5_000);

function grpcHealth(address: string): Promise<string> {
  const Health = makeGenericClientConstructor(healthService, 'Health');
  type Check = (
    req: { service: string },
    opts: { deadline: number },
    cb: (err: ServiceError | null, res?: { status: string | number }) => void,
  ) => void;
  const client = new Health(address, credentials.createInsecure()) as unknown as { check: Check; close(): void };
  return new Promise<string>((resolve, reject) => {
    // The empty service name asks about the whole server.
    client.check({ service: '' }, { deadline: Date.now() + timeoutMs }, (err, res) => {
      client.close();
      if (err) reject(new Error(`${address}: ${err.message}`));
      else if (res?.status === 'SERVING' || res?.status === 1) resolve(`${address}: SERVING`);
      else reject(new Error(`${address}: ${String(res?.status)}`));
    });
  });
}

async function httpOk(url: string): Promise<string> {
  const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) }).catch((err: Error & { cause?: Error }) => {
    throw new Error(`${url}: ${err.cause?.message ?? err.message}`);
  });
  const body = (await res.text()).slice(0, 200);
  if (!res.ok) throw new Error(`${url}: ${res.status} ${body}`);
  return `${url}: ${res.status} ${body}`;
}

const [kind, target] = process.argv.slice(2);
const check = kind === 'grpc' && target ? grpcHealth(target) : kind === 'http' && target ? httpOk(target) : undefined;
if (!check) {
  console.error('usage: probe.js grpc HOST:PORT | probe.js http URL');
  process.exit(2);
}
check.then(
  (line) => console.log(`ok ${line}`),
  (err: Error) => {
    console.error(`not ok ${err.message}`);
    process.exit(1);
  },
);
