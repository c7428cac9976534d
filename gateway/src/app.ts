import { OpenAPIRegistry, OpenApiGeneratorV31 } from '@asteasolutions/zod-to-openapi';
import type { Logger } from '@voiceapi/kit';
import express, { type Express, type RequestHandler } from 'express';
import swaggerUi from 'swagger-ui-express';
import type { KeyCache, AuthenticatedKey } from './auth/key-cache';
import type { ServiceClients } from './clients';
import { errorHandler, fail } from './http/errors';
import { authenticate, killSwitchGate, perKeyRateLimit, requestId, requireAdmin } from './http/middleware';
import { mountRoutes } from './http/route';
import type { OperatorUseCases } from './operator/operator';
import { adminRoutes } from './routes/admin';
import { companyRoutes } from './routes/companies';
import { pingRoutes } from './routes/ping';
import type { IdempotencyStore } from './store/idempotency';

export interface AppDeps {
  cfg: {
    ADMIN_TOKEN: string;
    KEY_HASH_PEPPER: string;
    RATE_LIMIT_PER_SECOND: number;
    BODY_LIMIT_BYTES: number;
  };
  log: Logger;
  killSwitch: () => boolean;
  ready: () => boolean;
  keys: KeyCache;
  onKeyUsed: (auth: AuthenticatedKey) => void;
  idempotency: IdempotencyStore;
  operator: OperatorUseCases;
  clients: ServiceClients;
}

export const API_PREFIX = '/api/v1';
export const ADMIN_PREFIX = '/admin/v1';

/** Builds the HTTP surface: probes, the tenant API, the operator API and the API reference. */
export function buildApp(deps: AppDeps): Express {
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
  api.use(requestId, killSwitchGate(deps.killSwitch));
  let openApiDoc: object | undefined;
  api.get('/openapi.json', (_req, res) => {
    openApiDoc ??= buildDocument(publicRegistry, 'Tenant API', 'Tenant-facing API of the AI voice-calling platform. Authenticate with `Authorization: Bearer <key>` or `X-API-Key: <key>`.');
    res.json(openApiDoc);
  });
  api.use(authenticate(deps.keys, deps.cfg.KEY_HASH_PEPPER, deps.onKeyUsed));
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
    },
    [...pingRoutes, ...companyRoutes(deps.clients)],
  );
  api.use(notFoundRoute);
  app.use(API_PREFIX, api);

  // Operator API: admin token only; the kill switch does not apply.
  const adminRegistry = new OpenAPIRegistry();
  adminRegistry.registerComponent('securitySchemes', 'adminToken', { type: 'http', scheme: 'bearer', description: 'ADMIN_TOKEN' });
  const admin = express.Router();
  admin.use(requestId, requireAdmin(deps.cfg.ADMIN_TOKEN));
  mountRoutes(admin, { kind: 'admin', prefix: ADMIN_PREFIX, registry: adminRegistry, bodyLimitBytes: deps.cfg.BODY_LIMIT_BYTES, log: deps.log }, adminRoutes(deps.operator));
  let adminDoc: object | undefined;
  admin.get('/openapi.json', (_req, res) => {
    adminDoc ??= buildDocument(adminRegistry, 'Operator API', 'Platform operator surface (tenants, API keys, kill switch).');
    res.json(adminDoc);
  });
  admin.use(notFoundRoute);
  app.use(ADMIN_PREFIX, admin);

  // Interactive reference: takes a key and sends it as Bearer.
  app.use(
    '/docs',
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

function tenantRegistry(): OpenAPIRegistry {
  const registry = new OpenAPIRegistry();
  registry.registerComponent('securitySchemes', 'bearerAuth', {
    type: 'http',
    scheme: 'bearer',
    description: 'API key (`sk_live_…` or `sk_sandbox_…`); the reference page adds the word Bearer',
  });
  registry.registerComponent('securitySchemes', 'apiKeyHeader', { type: 'apiKey', in: 'header', name: 'X-API-Key' });
  return registry;
}

function buildDocument(registry: OpenAPIRegistry, title: string, description: string): object {
  return new OpenApiGeneratorV31(registry.definitions).generateDocument({
    openapi: '3.1.0',
    info: { title, version: '1.0.0', description },
  });
}
