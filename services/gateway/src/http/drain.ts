import type { IncomingMessage, Server, ServerResponse } from 'node:http';

/** How long a stopping gateway waits at most for its keep-alive clients to go before it closes their connections. */
const KEEPALIVE_DRAIN_MS = 6_000;
/**
 * Clients that sent nothing for this long are taken as gone quiet: their connections are closed.
 * Long enough that a client's spare pooled connection, used only when its requests overlap, is
 * likely used (and answered with `Connection: close`) first. With 300 ms a CI run of the live
 * cluster's pod-loss case saw one post's connection fail.
 */
const KEEPALIVE_QUIET_MS = 2_000;

/**
 * Stops taking requests without failing one. From now on every response asks its client to close
 * the connection (`Connection: close`): a client reusing a keep-alive connection gets its answer
 * and sends its next request on a new connection, which the Service routes to another replica.
 * Closing an idle keep-alive connection at once instead races the client's next request on it,
 * which then fails (the live cluster's pod-loss test saw it). Connections still open once no
 * request came for KEEPALIVE_QUIET_MS, or after KEEPALIVE_DRAIN_MS, are closed with the listener;
 * requests in flight finish. That last close can still meet a request the client sends at that
 * instant (HTTP/1.1 has no way to warn it): clients retry a failed connection with an
 * `Idempotency-Key`, as the SDKs do.
 */
export async function closeHttp(
  server: Server,
  timing = { drainMs: KEEPALIVE_DRAIN_MS, quietMs: KEEPALIVE_QUIET_MS },
): Promise<void> {
  let lastRequestAt = Date.now();
  server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => {
    lastRequestAt = Date.now();
    if (!res.headersSent) res.setHeader('Connection', 'close');
  });
  const deadline = Date.now() + timing.drainMs;
  while (Date.now() < deadline && Date.now() - lastRequestAt < timing.quietMs && (await openConnections(server)) > 0)
    await new Promise((r) => setTimeout(r, 25));
  await new Promise<void>((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
  });
}

const openConnections = (server: Server) =>
  new Promise<number>((resolve) => server.getConnections((_err, n) => resolve(n ?? 0)));
