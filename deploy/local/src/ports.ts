import { readFileSync } from 'node:fs';
import * as net from 'node:net';

/**
 * The lowest port the kernel gives an outgoing connection as its source port. A port found free
 * inside that range can be taken by any client's connection (to the store, to Kafka) before the
 * process it was found for listens on it (EADDRINUSE), so ports are chosen below it.
 */
const EPHEMERAL_LOW = (() => {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32_768;
  } catch {
    return 32_768;
  }
})();
const LOWEST = 10_000;
/** Ports this process handed out: a port found free is not handed out twice before its owner listens. */
const handedOut = new Set<number>();

/** Listens on `port` (0: any the kernel picks); the server, or undefined when the port is taken. */
async function hold(port: number): Promise<net.Server | undefined> {
  const srv = net.createServer();
  return new Promise((resolve) => {
    srv.once('error', () => resolve(undefined));
    srv.listen(port, '127.0.0.1', () => resolve(srv));
  });
}

/** A free port below the ephemeral range (any free port when there is no room below it), held open. */
async function holdFree(): Promise<net.Server> {
  for (let tries = 0; tries < 200 && EPHEMERAL_LOW - LOWEST > 1_000; tries++) {
    const port = LOWEST + Math.floor(Math.random() * (EPHEMERAL_LOW - LOWEST));
    if (handedOut.has(port)) continue;
    const srv = await hold(port);
    if (srv) return srv;
  }
  const srv = await hold(0);
  if (!srv) throw new Error('no free port on 127.0.0.1');
  return srv;
}

/** Free TCP ports on 127.0.0.1, distinct from each other and from those handed out before by this process. */
export async function freePorts(count: number): Promise<number[]> {
  const servers: net.Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) {
      const srv = await holdFree();
      servers.push(srv);
      const port = (srv.address() as net.AddressInfo).port;
      handedOut.add(port);
      ports.push(port);
    }
    return ports;
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  }
}

/** True when something accepts TCP connections on host:port. */
export function tcpOpen(port: number, timeoutMs = 1000, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
