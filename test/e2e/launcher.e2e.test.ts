import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort, ROOT } from '../harness/processes';
import { call } from '../harness/system';
import { eventually } from '../harness/wait';

// The README's `make run` launcher (after `make infra`): prints how to call it, keeps tenants and
// keys across a restart, restarts a process that dies while the others keep serving, and stops
// everything on Ctrl-C. It uses the harness's servers via MONGO_URL unless a test says otherwise.
describe('make run launcher', () => {
  interface Launched {
    child: ChildProcess;
    banner: Promise<string>;
    output(): string;
    /** Resolves with the first match of `re` in the output (now or later). */
    waitFor(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  }

  // Each test's DATA_DIR (the launcher's logs and keys; with servers of its own, their data too:
  // hundreds of MB), with the launchers started on it. A launcher writes there until it has stopped
  // its processes and exited, so a folder is removed once all its launchers have exited (each test
  // stops its own).
  const dataDirs = new Map<string, ChildProcess[]>();
  afterEach(() => {
    for (const [dir, launched] of dataDirs)
      if (launched.every((c) => c.exitCode !== null || c.signalCode !== null)) {
        rmSync(dir, { recursive: true, force: true });
        dataDirs.delete(dir);
      }
  });

  function launch(dataDir: string, port: number, extraEnv: Record<string, string> = {}): Launched {
    const child = spawn(process.execPath, [path.join(ROOT, 'deploy/local/dist/run.js')], {
      cwd: ROOT,
      env: { ...process.env, DATA_DIR: dataDir, PORT: String(port), LOG_LEVEL: 'warn', ADMIN_TOKEN: '', ...extraEnv },
      stdio: ['ignore', 'pipe', 'pipe'],
      // A process group of its own, as in a terminal: Ctrl-C (see stop) reaches the whole group.
      detached: true,
    });
    dataDirs.set(dataDir, [...(dataDirs.get(dataDir) ?? []), child]);
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    // A match in what it printed so far ends the wait, before its exit does (it may print and exit).
    const waitFor = (re: RegExp, timeoutMs = 60_000) =>
      eventually(
        `${re}`,
        () => {
          const m = re.exec(out);
          if (!m && (child.exitCode !== null || child.signalCode !== null))
            throw new Error(`launcher exited waiting for ${re}:\n${out}`);
          return m;
        },
        timeoutMs,
        { intervalMs: 50, detail: () => `\n${out}` },
      );
    const banner = waitFor(/Ctrl-C stops everything/, 150_000).then(() => out);
    banner.catch(() => undefined); // a test that fails earlier reports its own error
    return { child, banner, output: () => out, waitFor };
  }

  const field = (banner: string, label: string) => new RegExp(`${label}\\s+(\\S+)`).exec(banner)?.[1] ?? '';

  /** Ctrl-C in a terminal: SIGINT to every process of the launcher's group. */
  async function stop(child: ChildProcess): Promise<number | null> {
    if (child.exitCode !== null) return child.exitCode;
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    process.kill(-child.pid!, 'SIGINT');
    return exited;
  }

  /** Every process below `pid` (children, their children, …). */
  function descendants(pid: number): number[] {
    const rows = execFileSync('ps', ['-A', '-o', 'pid=,ppid='], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .map((l) => l.trim().split(/\s+/).map(Number));
    const found: number[] = [];
    const queue = [pid];
    while (queue.length) {
      const parent = queue.shift()!;
      for (const [p, pp] of rows)
        if (pp === parent && p !== undefined) {
          found.push(p);
          queue.push(p);
        }
    }
    return found;
  }

  /** Running, not a zombie waiting to be reaped. */
  function alive(pid: number): boolean {
    try {
      return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
    } catch {
      return false;
    }
  }

  /** `[run] <name> started|restarted (pid N, …)`: the pid of the latest start. */
  const pidOf = (out: string, name: string) =>
    Number([...out.matchAll(new RegExp(`\\[run\\] ${name} (?:re)?started \\(pid (\\d+)`, 'g'))].at(-1)?.[1]);

  it('prints URL, admin token and working keys, and keeps them across a restart', async () => {
    const dataDir = mkdtempSync(path.join(tmpdir(), 'voiceapi-run-'));
    const port = await freePort();
    const first = launch(dataDir, port);
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

    const second = launch(dataDir, port);
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

  it('restarts a killed service while the gateway keeps answering, and Ctrl-C leaves no process behind', async () => {
    const port = await freePort();
    const run = launch(mkdtempSync(path.join(tmpdir(), 'voiceapi-run-')), port);
    const base = `http://127.0.0.1:${port}`;
    try {
      const banner = await run.banner;
      const live = field(banner, 'Live key');
      const created = await call(`${base}/api/v1/companies`, { key: live, body: { name: 'Outlives a crash' } });
      expect(created.status).toBe(201);

      const victim = pidOf(run.output(), 'companies');
      expect(readFileSync(`/proc/${victim}/cmdline`, 'utf8')).toContain('services/companies/dist/main.js');
      process.kill(victim, 'SIGKILL');
      await run.waitFor(/\[run\] companies exited \(signal SIGKILL\); restarting in 0\.5 s/, 10_000);
      // The edge does not depend on the backend: it answers throughout.
      expect((await call(`${base}/api/v1/ping`, { key: live })).status).toBe(200);

      await run.waitFor(/\[run\] companies restarted \(pid \d+/, 10_000);
      const restarted = pidOf(run.output(), 'companies');
      expect(restarted).not.toBe(victim);
      await eventually(
        'companies answers again',
        async () => (await call(`${base}/api/v1/companies/${created.body.company.id}`, { key: live })).status === 200,
        20_000,
        { intervalMs: 200, retryErrors: true },
      );
      expect((await call(`${base}/api/v1/companies`, { key: live, body: { name: 'After the restart' } })).status).toBe(
        201,
      );
      expect((await call(`${base}/api/v1/ping`, { key: live })).status).toBe(200);
    } finally {
      const children = descendants(run.child.pid!);
      expect(children.length).toBeGreaterThanOrEqual(2); // companies and the gateway
      expect(await stop(run.child)).toBe(0);
      expect(children.filter(alive)).toEqual([]);
    }
  });

  it('with its own store and Kafka: restarts the store on the same port and data after SIGKILL, and stops every server on Ctrl-C', async () => {
    const port = await freePort();
    // No MONGO_URL / KAFKA_BROKERS: the launcher starts and supervises the servers itself.
    const dataDir = mkdtempSync(path.join(tmpdir(), 'voiceapi-run-'));
    const run = launch(dataDir, port, { MONGO_URL: '', KAFKA_BROKERS: '' });
    const base = `http://127.0.0.1:${port}`;
    let children: number[] = [];
    try {
      const banner = await run.banner;
      const live = field(banner, 'Live key');
      const created = await call(`${base}/api/v1/companies`, { key: live, body: { name: 'Kept by the store' } });
      expect(created.status).toBe(201);
      // A clean start logs no error and no Node warning: kafkajs's expected start-up retries are
      // below warning, and its negative-timeout warning under Node 26 is dropped (kit events/kafka.ts).
      const logs = readdirSync(path.join(dataDir, 'logs')).flatMap((f) =>
        readFileSync(path.join(dataDir, 'logs', f), 'utf8')
          .split('\n')
          .map((l) => `${f}: ${l}`),
      );
      expect(logs.filter((l) => /"level":(50|60)|Warning:/.test(l))).toEqual([]);
      const url = (await run.waitFor(/\[run\] store started \(pid \d+, (\S+)\)/))[1];
      children = descendants(run.child.pid!);

      process.kill(pidOf(run.output(), 'store'), 'SIGKILL');
      await run.waitFor(/\[run\] store exited \(signal SIGKILL\); restarting in 0\.5 s/, 10_000);
      expect((await run.waitFor(/\[run\] store restarted \(pid \d+, (\S+)\)/, 40_000))[1]).toBe(url);
      children.push(pidOf(run.output(), 'store'));
      await eventually(
        'the company is readable again',
        async () => (await call(`${base}/api/v1/companies/${created.body.company.id}`, { key: live })).status === 200,
        20_000,
        { intervalMs: 200, retryErrors: true },
      );
    } finally {
      children.push(...descendants(run.child.pid!));
      const t0 = Date.now();
      expect(await stop(run.child)).toBe(0);
      expect([...new Set(children)].filter(alive)).toEqual([]);
      // In the reverse of the start order: the gateway first, the store and Kafka last, so no
      // service works on against a stopped store.
      const order = [...run.output().matchAll(/\[run\] (\S+) stopped/g)].map((m) => m[1]!);
      expect(order[0]).toBe('gateway');
      expect(order.slice(-2).sort()).toEqual(['kafka', 'store']);
      const processes = (
        JSON.parse(readFileSync(path.join(ROOT, 'services/manifest.json'), 'utf8')) as { processes: unknown[] }
      ).processes.length;
      expect(order).toHaveLength(processes + 2); // every process of the manifest, the store and Kafka
      expect(Date.now() - t0).toBeLessThan(20_000);
    }
    // The store, Kafka (java), companies and the gateway were all there.
    expect(children.length).toBeGreaterThanOrEqual(4);
  }, 240_000);
});
