/**
 * What a test left open that would keep the test process alive after the run: a server still
 * listening, a child process still running, a connection still up. jest in band would wait for
 * them for ever (CI is killed with every test passed), so the run fails instead, naming each one.
 * Timers are not counted: they end by themselves or are unref'd by the libraries that keep them.
 */
export async function leftOpen(graceMs = 1_000): Promise<string[]> {
  // Closing sockets and exiting children settle within a tick or two of their owner's stop.
  await new Promise((r) => setTimeout(r, graceMs));
  const handles = (process as unknown as { _getActiveHandles(): object[] })._getActiveHandles();
  const out: string[] = [];
  for (const h of handles) {
    if ((h as { hasRef?: () => boolean }).hasRef?.() === false) continue;
    const kind = h.constructor.name;
    if (kind === 'Server' || kind === 'Http2Server') {
      out.push(`${kind} listening on ${JSON.stringify((h as { address(): unknown }).address())}`);
    } else if (kind === 'ChildProcess') {
      const args = (h as { spawnargs: string[] }).spawnargs;
      if (!args.some((a) => a.includes('jest-worker'))) out.push(`child process ${args.join(' ')}`);
    } else if (kind === 'Socket') {
      const s = h as { remoteAddress?: string; remotePort?: number; localPort?: number };
      // stdio and jest's own pipes have no remote end.
      if (s.remoteAddress) out.push(`connection 127.0.0.1:${s.localPort} -> ${s.remoteAddress}:${s.remotePort}`);
    }
  }
  return out;
}
