import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '@voiceapi/kit/service';
import express, { type Express, type RequestHandler } from 'express';
import swaggerUi from 'swagger-ui-express';
import type { KeyCache, AuthenticatedKey } from './auth/key-cache';
import type { ServiceClients } from './clients';
import { errorHandler, fail, type ErrorBody } from './http/errors';
import { HTTP_STATUS, type HttpReason } from './http/reasons';
import { authenticate, inSequence, killSwitchGate, perKeyRateLimit, requestId, requireAdmin } from './http/middleware';
import type { IdempotencyRecords } from './http/idempotency';
import { mountRoutes } from './http/mount';
import { API_VERSION, CHANGELOG_PATH, changelogMarkdown } from './http/api-release';
import { adminRegistry, buildDocument, tenantRegistry } from './http/openapi';
import type { OperatorUseCases } from './operator/operator';
import { adminAreas, routesOf, signedAreas, tagsOf, tenantAreas } from './routes';
import type { CallStreams } from './routes/telephony/call-stream';
import { registerWebhookPayloads } from './routes/webhooks';

export interface AppDeps {
  cfg: {
    ADMIN_TOKEN: string;
    KEY_HASH_PEPPER: string;
    RATE_LIMIT_PER_SECOND: number;
    BODY_LIMIT_BYTES: number;
    /** Test harnesses: check every answer against its documented schema (off in production). */
    RESPONSE_SCHEMA_CHECK: boolean;
  };
  log: Logger;
  killSwitch: () => boolean;
  ready: () => boolean;
  keys: KeyCache;
  onKeyUsed: (auth: AuthenticatedKey) => void;
  idempotency: IdempotencyRecords;
  operator: OperatorUseCases;
  clients: ServiceClients;
  streams: CallStreams;
}

export const API_PREFIX = '/api/v1';
export const ADMIN_PREFIX = '/admin/v1';

/** Builds the HTTP surface: probes, the tenant API, the operator API and the API reference. */
export function buildApp(deps: AppDeps): Express {
  const routeDeps = { clients: deps.clients, operator: deps.operator, streams: deps.streams };
  const checkResponses = deps.cfg.RESPONSE_SCHEMA_CHECK;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');

  // RFC 9112 §3.2: a request with more than one Host is answered 400, before anything else.
  app.use(oneHost);
  app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  app.get('/readyz', (_req, res) => {
    const ready = deps.ready();
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'starting' });
  });

  // Tenant API: kill switch → key → (per route) scope → rate limit → validation → service.
  const publicRegistry = tenantRegistry();
  registerWebhookPayloads(publicRegistry);
  const api = express.Router();
  const killSwitch = killSwitchGate(deps.killSwitch);
  let openApiDoc: object | undefined;
  api.get('/openapi.json', requestId, killSwitch, (_req, res) => {
    openApiDoc ??= buildDocument(
      publicRegistry,
      {
        title: 'Tenant API',
        version: API_VERSION,
        description:
          'Tenant-facing API of the AI voice-calling platform. Authenticate with `Authorization: Bearer <key>` or `X-API-Key: <key>`.\n\n' +
          `What changed in each release, and what is deprecated: [changelog](${CHANGELOG_PATH}).`,
      },
      tagsOf(tenantAreas),
    );
    res.json(openApiDoc);
  });
  // Signed links (recordings): no key, the token is the authorisation; the kill switch applies.
  const signed = express.Router();
  mountRoutes(
    signed,
    {
      kind: 'signed',
      prefix: API_PREFIX,
      registry: publicRegistry,
      bodyLimitBytes: deps.cfg.BODY_LIMIT_BYTES,
      log: deps.log,
      checkResponses,
      guards: [requestId, killSwitch],
    },
    routesOf(signedAreas, routeDeps),
  );
  app.use(API_PREFIX, signed);
  // One router layer for the three: each layer costs on every request.
  api.use(inSequence(requestId, killSwitch, authenticate(deps.keys, deps.cfg.KEY_HASH_PEPPER, deps.onKeyUsed)));
  mountRoutes(
    api,
    {
      kind: 'tenant',
      prefix: API_PREFIX,
      registry: publicRegistry,
      rateLimit: perKeyRateLimit(deps.cfg.RATE_LIMIT_PER_SECOND),
      idempotency: deps.idempotency,
      bodyLimitBytes: deps.cfg.BODY_LIMIT_BYTES,
      log: deps.log,
      checkResponses,
    },
    routesOf(tenantAreas, routeDeps),
  );
  api.use(notFoundRoute);
  app.use(API_PREFIX, api);

  // Operator API: admin token only; the kill switch does not apply.
  const operatorRegistry = adminRegistry();
  const admin = express.Router();
  admin.use(requestId, requireAdmin(deps.cfg.ADMIN_TOKEN));
  mountRoutes(
    admin,
    {
      kind: 'admin',
      prefix: ADMIN_PREFIX,
      registry: operatorRegistry,
      bodyLimitBytes: deps.cfg.BODY_LIMIT_BYTES,
      log: deps.log,
      checkResponses,
    },
    routesOf(adminAreas, routeDeps),
  );
  let adminDoc: object | undefined;
  admin.get('/openapi.json', (_req, res) => {
    adminDoc ??= buildDocument(
      operatorRegistry,
      {
        title: 'Operator API',
        version: '1.0.0',
        description: 'Platform operator surface (tenants, API keys, kill switch, credit top-ups).',
      },
      tagsOf(adminAreas),
    );
    res.json(adminDoc);
  });
  admin.use(notFoundRoute);
  app.use(ADMIN_PREFIX, admin);

  // The reference page takes a key: never inside another site's frame (clickjacking).
  const docsHeaders: RequestHandler = (_req, res, next) => {
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Content-Security-Policy', "frame-ancestors 'none'");
    res.setHeader('X-Content-Type-Options', 'nosniff');
    next();
  };
  // The tenants' changelog, linked from the reference page and from deprecated answers' `Link`.
  const changelog = changelogMarkdown();
  app.get(CHANGELOG_PATH, docsHeaders, (_req, res) => {
    res.type('text/markdown; charset=utf-8').send(changelog);
  });
  // Interactive reference: takes a key and sends it as Bearer.
  app.use(
    '/docs',
    docsHeaders,
    swaggerUi.serve,
    swaggerUi.setup(undefined, {
      customSiteTitle: 'Tenant API reference',
      // The key stays in page memory only: not persisted to localStorage where other scripts could read it.
      swaggerOptions: { url: `${API_PREFIX}/openapi.json`, persistAuthorization: false },
    }),
  );

  app.use(notFoundRoute);
  app.use(errorHandler(deps.log));
  return app;
}

const notFoundRoute: RequestHandler = (_req, res) => fail(res, 'not_found', 'no such endpoint');

/** Node keeps the first of several Host headers; HTTP/1.1 says such a request is invalid. */
const oneHost: RequestHandler = (req, res, next) => {
  let hosts = 0;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === 4 && raw[i]!.toLowerCase() === 'host') hosts++;
  if (hosts > 1) {
    res.setHeader('X-Request-Id', randomUUID());
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Connection', 'close');
    return fail(res, 'validation_error', 'a request must carry exactly one Host header');
  }
  next();
};

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  408: 'Request Timeout',
  414: 'URI Too Long',
  431: 'Request Header Fields Too Large',
};

/**
 * The HTTP server for the app: request heads over `maxHeaderBytes` and requests Node cannot parse
 * get the documented error body (not a bare status line or a reset) and the connection closes.
 * A head over the limit whose request line has not ended is a URL too long (414); otherwise the
 * header fields are (431).
 */
export function createHttpServer(app: Express, opts: { maxHeaderBytes: number; log: Logger }): Server {
  const server = createServer({ maxHeaderSize: opts.maxHeaderBytes }, app);
  const answered = new WeakSet<Socket>();
  server.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: Buffer }, socket: Socket) => {
    // The parser may report more than once for one connection; answer once.
    if (answered.has(socket) || err.code === 'ECONNRESET' || !socket.writable) return void socket.destroy();
    answered.add(socket);
    let reason: HttpReason = 'validation_error';
    let message = 'malformed HTTP request';
    if (err.code === 'HPE_HEADER_OVERFLOW') {
      const packet = err.rawPacket;
      const lineOpen =
        packet !== undefined && /^[A-Z]+ /.test(packet.subarray(0, 16).toString('latin1')) && !packet.includes(10);
      reason = lineOpen ? 'uri_too_long' : 'headers_too_large';
      message = lineOpen
        ? `request URL is too long (the request head may be at most ${opts.maxHeaderBytes} bytes)`
        : `request header fields are too large (the request head may be at most ${opts.maxHeaderBytes} bytes)`;
    } else if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
      return void socket.end(`HTTP/1.1 408 ${STATUS_TEXT[408]}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    }
    const status = HTTP_STATUS[reason];
    const body: ErrorBody = { error: message, reasonCode: reason };
    const payload = JSON.stringify(body);
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_TEXT[status]}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(payload)}\r\n` +
        `X-Request-Id: ${randomUUID()}\r\n` +
        'Cache-Control: no-store\r\n' +
        'X-Content-Type-Options: nosniff\r\n' +
        'Connection: close\r\n\r\n' +
        payload,
    );
    opts.log.debug({ code: err.code, status }, 'refused a request Node could not parse');
  });
  return server;
}
