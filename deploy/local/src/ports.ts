import * as net from 'node:net';

/** Free TCP ports on 127.0.0.1 (all held open together, so they are distinct). */
export async function freePorts(count: number): Promise<number[]> {
  const servers: net.Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) {
      const srv = net.createServer();
      servers.push(srv);
      await new Promise<void>((resolve, reject) => {
        srv.once('error', reject);
        srv.listen(0, '127.0.0.1', resolve);
      });
      ports.push((srv.address() as net.AddressInfo).port);
    }
    return ports;
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((r) => s.close(() => r()))));
  }
}

/** True when something accepts TCP connections on 127.0.0.1:port. */
export function tcpOpen(port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: '127.0.0.1', port });
    const done = (open: boolean) => {
      socket.destroy();
      resolve(open);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}
