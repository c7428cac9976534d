import type { Logger } from '@voiceapi/kit';
import express, { type Express, type RequestHandler } from 'express';
import swaggerUi from 'swagger-ui-express';
import type { KeyCache, AuthenticatedKey } from './auth/key-cache';
import type { ServiceClients } from './clients';
import { errorHandler, fail } from './http/errors';
import { authenticate, inSequence, killSwitchGate, perKeyRateLimit, requestId, requireAdmin } from './http/middleware';
import type { IdempotencyRecords } from './http/idempotency';
import { mountRoutes } from './http/mount';
import { adminRegistry, buildDocument, tenantRegistry } from './http/openapi';
import type { OperatorUseCases } from './operator/operator';
import { adminAreas, routesOf, tagsOf, tenantAreas } from './routes';

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
}

export const API_PREFIX = '/api/v1';
export const ADMIN_PREFIX = '/admin/v1';

/** Builds the HTTP surface: probes, the tenant API, the operator API and the API reference. */
export function buildApp(deps: AppDeps): Express {
  const routeDeps = { clients: deps.clients, operator: deps.operator };
  const checkResponses = deps.cfg.RESPONSE_SCHEMA_CHECK;
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');

  app.get('/healthz', (_req, res) => void res.json({ status: 'ok' }));
  app.get('/readyz', (_req, res) => {
    const ready = deps.ready();
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'starting' });
  });

  // Tenant API: kill switch → key → (per route) scope → rate limit → validation → service.
  const publicRegistry = tenantRegistry();
  const api = express.Router();
  const killSwitch = killSwitchGate(deps.killSwitch);
  let openApiDoc: object | undefined;
  api.get('/openapi.json', requestId, killSwitch, (_req, res) => {
    openApiDoc ??= buildDocument(publicRegistry, 'Tenant API', 'Tenant-facing API of the AI voice-calling platform. Authenticate with `Authorization: Bearer <key>` or `X-API-Key: <key>`.', tagsOf(tenantAreas));
    res.json(openApiDoc);
  });
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
    { kind: 'admin', prefix: ADMIN_PREFIX, registry: operatorRegistry, bodyLimitBytes: deps.cfg.BODY_LIMIT_BYTES, log: deps.log, checkResponses },
    routesOf(adminAreas, routeDeps),
  );
  let adminDoc: object | undefined;
  admin.get('/openapi.json', (_req, res) => {
    adminDoc ??= buildDocument(operatorRegistry, 'Operator API', 'Platform operator surface (tenants, API keys, kill switch).', tagsOf(adminAreas));
    res.json(adminDoc);
  });
  admin.use(notFoundRoute);
  app.use(ADMIN_PREFIX, admin);

  // Interactive reference: takes a key and sends it as Bearer.
  app.use(
    '/docs',
    // The reference page takes a key: never inside another site's frame (clickjacking).
    ((_req, res, next) => {
      res.setHeader('X-Frame-Options', 'DENY');
      res.setHeader('Content-Security-Policy', "frame-ancestors 'none'");
      res.setHeader('X-Content-Type-Options', 'nosniff');
      next();
    }) satisfies RequestHandler,
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
