import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** One request a receiver got, verified with the Standard Webhooks library's own verifier. */
export interface Received {
  path: string;
  id: string;
  body: string;
  headers: IncomingHttpHeaders;
  /** The secrets (by index in `secrets[path]`) whose verifier accepted it. */
  verifiedBy: number[];
  at: number;
}

export interface Answer {
  status: number;
  delayMs?: number;
  headers?: Record<string, string>;
  /** Bytes of body to send (streamed), for oversized answers. */
  bodyBytes?: number;
  /** Never answer (the connection stays open until the client gives up). */
  hang?: boolean;
}

/**
 * A tenant's endpoint, for tests and the benchmark: a real local HTTP server whose answer each path
 * decides (`behave`, given how many times that path was called), that records every request and
 * verifies its signature with the `standardwebhooks` library, as a tenant would.
 */
export class Receiver {
  readonly received: Received[] = [];
  readonly secrets = new Map<string, string[]>();
  private readonly calls = new Map<string, number>();
  private server!: Server;
  base = '';
  behave: (path: string, call: number) => Answer = () => ({ status: 204 });

  /** Listens on `host` (loopback; the local cluster's tests give the node's address, which its pods reach). */
  async start(host = '127.0.0.1'): Promise<this> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = req.url ?? '/';
        const body = Buffer.concat(chunks).toString();
        const call = (this.calls.get(path) ?? 0) + 1;
        this.calls.set(path, call);
        const headers = req.headers;
        const verifiedBy = (this.secrets.get(path) ?? []).flatMap((secret, i) => {
          try {
            new Webhook(secret).verify(body, headers as Record<string, string>);
            return [i];
          } catch {
            return [];
          }
        });
        this.received.push({
          path,
          id: String(headers['webhook-id'] ?? ''),
          body,
          headers,
          verifiedBy,
          at: Date.now(),
        });
        const answer = this.behave(path, call);
        if (answer.hang) return;
        const send = () => {
          res.writeHead(answer.status, answer.headers ?? {});
          if (!answer.bodyBytes) return res.end();
          const chunk = Buffer.alloc(64 * 1024, 'x');
          let sent = 0;
          const push = () => {
            while (sent < answer.bodyBytes!) {
              sent += chunk.length;
              if (!res.write(chunk)) return res.once('drain', push);
            }
            res.end();
          };
          res.on('error', () => undefined);
          push();
        };
        if (answer.delayMs) setTimeout(send, answer.delayMs);
        else send();
      });
    });
    this.server.keepAliveTimeout = 60_000;
    await new Promise<void>((r) => this.server.listen(0, host, r));
    this.base = `http://${host}:${(this.server.address() as AddressInfo).port}`;
    return this;
  }

  /** `host:port` for OUTBOUND_ALLOWLIST. */
  get hostPort(): string {
    return this.base.replace('http://', '');
  }

  at(path: string): Received[] {
    return this.received.filter((r) => r.path === path);
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}
