import { createServer, type Server } from 'node:http';
import { connect, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';

/**
 * An egress proxy on loopback as a platform runs one (HTTP CONNECT, e.g. Smokescreen): what the services send to
 * tenants' URLs goes through it (OUTBOUND_PROXY). `stop` takes it down with its open tunnels (our egress failing);
 * `start` brings it back on the same port.
 */
export class EgressProxy {
  private server: Server | undefined;
  private readonly tunnels = new Set<Socket>();
  private port = 0;
  /** Tunnels opened so far. */
  tunnelled = 0;

  /** `http://127.0.0.1:PORT`, the OUTBOUND_PROXY setting. */
  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    const server = createServer((_req, res) => res.writeHead(405).end('CONNECT only'));
    server.on('connect', (req, client: Socket, head: Buffer) => {
      const [host, port] = (req.url ?? '').split(':');
      const upstream = connect(Number(port), host ?? '', () => {
        this.tunnelled++;
        client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
        if (head.length) upstream.write(head);
        upstream.pipe(client).pipe(upstream);
      });
      for (const s of [client, upstream]) {
        this.tunnels.add(s);
        s.on('close', () => this.tunnels.delete(s));
      }
      upstream.on('error', () => client.end('HTTP/1.1 502 Bad Gateway\r\n\r\n'));
      client.on('error', () => upstream.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    this.port = (server.address() as AddressInfo).port;
    this.server = server;
    return this;
  }

  async stop(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const s of this.tunnels) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }
}
