import type { Server } from 'node:http';
import type { OpenedService } from '@voiceapi/kit/service';
import type { Express } from 'express';
import { createHttpServer } from '../app';
import type { Config } from '../config';
import { closeHttp } from '../http/drain';
import type { CallStreams } from '../routes/telephony/call-stream';

/** The HTTP server, listening; on stop it stops accepting, lets requests in flight finish, and ends call streams first. */
export async function serveHttp({ cfg, log, lifecycle }: OpenedService<Config>, app: Express, streams: CallStreams) {
  const server: Server = await new Promise((resolve, reject) => {
    const s = createHttpServer(app, { maxHeaderBytes: cfg.MAX_HEADER_BYTES, log }).listen(cfg.PORT, cfg.HOST, () =>
      resolve(s),
    );
    s.once('error', reject);
  });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  // Stop accepting first; requests in flight finish, idle keep-alive sockets close.
  lifecycle.onStop('http', () => closeHttp(server));
  // First of all (hooks run last-registered first): the open call streams end, so their clients
  // reconnect to another replica with their Last-Event-ID while this one drains.
  lifecycle.onStop('call streams', () => streams.closeAll());
  const address = server.address();
  return typeof address === 'object' && address ? address.port : cfg.PORT;
}
