/**
 * The reference servers of `baselines.ts`, started as processes of their own, and the bare Express
 * rate: the yardstick the whole-system figures are divided by (ratios in one run hold from machine
 * to machine; absolute rates do not).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import autocannon from 'autocannon';
import { freePort, ROOT } from '../harness/processes';
import { cpuSeconds } from './cpu';

export function startBaseline(mode: string, port: number, target?: string): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', path.join(__dirname, 'baselines.ts'), mode, String(port), ...(target ? [target] : [])],
    {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  return new Promise((resolve, reject) => {
    child.stdout.once('data', () => setTimeout(() => resolve(child), 300));
    child.once('exit', (code) => reject(new Error(`${mode} exited ${code}`)));
  });
}

/** A bare Express `GET` answering static JSON, as fast as it goes: requests per second and the server's CPU per request. */
export async function bareExpress(
  seconds: number,
  connections: number,
): Promise<{ rps: number; cpuMsPerRequest: number }> {
  const port = await freePort();
  const child = await startBaseline('bare-http', port);
  try {
    const url = `http://127.0.0.1:${port}/ping`;
    await autocannon({ url, connections, duration: 2 });
    const cpu0 = cpuSeconds(child.pid!);
    const r = await autocannon({ url, connections, duration: seconds });
    const requests = r.requests.total;
    return {
      rps: r.requests.average,
      cpuMsPerRequest: ((cpuSeconds(child.pid!) - cpu0) * 1000) / Math.max(1, requests),
    };
  } finally {
    child.kill('SIGTERM');
  }
}
