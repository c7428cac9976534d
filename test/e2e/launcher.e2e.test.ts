import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, ROOT } from '../harness/processes';
import { call } from '../harness/system';

// The README's `make run` launcher (after `make infra`): prints how to call it, keeps tenants and
// keys across a restart, stops cleanly on Ctrl-C. It uses the harness's servers via MONGO_URL.
describe('make run launcher', () => {
  const dataDir = mkdtempSync(path.join(tmpdir(), 'voiceapi-run-'));
  let port: number;

  beforeAll(async () => {
    port = await freePort();
  });

  function launch(): { child: ChildProcess; banner: Promise<string> } {
    const child = spawn(process.execPath, [path.join(ROOT, 'deploy/local/dist/run.js')], {
      cwd: ROOT,
      env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn', ADMIN_TOKEN: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const banner = new Promise<string>((resolve, reject) => {
      child.stdout!.on('data', (b: Buffer) => {
        out += b.toString();
        if (out.includes('Ctrl-C stops everything')) resolve(out);
      });
      child.stderr!.on('data', (b: Buffer) => (out += b.toString()));
      child.once('exit', (code) => reject(new Error(`launcher exited ${code}:\n${out}`)));
    });
    return { child, banner };
  }

  const field = (banner: string, label: string) => new RegExp(`${label}\\s+(\\S+)`).exec(banner)?.[1] ?? '';

  async function stop(child: ChildProcess): Promise<number | null> {
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    child.kill('SIGINT');
    return exited;
  }

  it('prints URL, admin token and working keys, and keeps them across a restart', async () => {
    const first = launch();
    const banner = await first.banner;
    const base = `http://127.0.0.1:${port}`;
    expect(banner).toContain(`${base}/api/v1`);
    const admin = field(banner, 'Admin token');
    const sandbox = field(banner, 'Sandbox key');
    const live = field(banner, 'Live key');
    expect(sandbox).toMatch(/^sk_sandbox_/);
    expect(live).toMatch(/^sk_live_/);
    expect(banner).toMatch(/curl -s .*\/api\/v1\/ping/);
    expect((await call(`${base}/api/v1/ping`, { key: sandbox })).body).toMatchObject({ ok: true, mode: 'sandbox' });
    const created = await call(`${base}/api/v1/companies`, { key: live, body: { name: 'Survives restarts' } });
    expect(created.status).toBe(201);
    const kill = await call(`${base}/admin/v1/kill-switch`, { headers: { authorization: `Bearer ${admin}` } });
    expect(kill.body).toEqual({ enabled: false });
    expect(await stop(first.child)).toBe(0);

    const second = launch();
    const again = await second.banner;
    try {
      expect(field(again, 'Sandbox key')).toBe(sandbox);
      expect(field(again, 'Admin token')).toBe(admin);
      expect((await call(`${base}/api/v1/ping`, { key: live })).status).toBe(200);
      const got = await call(`${base}/api/v1/companies/${created.body.company.id}`, { key: live });
      expect(got.body.company.name).toBe('Survives restarts');
    } finally {
      expect(await stop(second.child)).toBe(0);
    }
  });
});
