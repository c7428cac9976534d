import type { Router } from 'express';
import { fail } from './errors';
import { routeHandler } from './execute';
import { documentRoute } from './openapi';
import { allowHeader, type AnyRoute, type Surface } from './route';

/** Mounts each route on the router and documents it, from one definition. */
export function mountRoutes(router: Router, surface: Surface, routes: AnyRoute[]): void {
  for (const route of routes) {
    if (route.body === undefined && (route.method === 'post' || route.method === 'put' || route.method === 'patch')) {
      // A forgotten body would accept anything silently: say which kind (a schema, multipart(...), noBody).
      throw new Error(`${route.method.toUpperCase()} ${route.path} must declare its body`);
    }
    documentRoute(surface, route);
    router[route.method](expressPath(route.path), ...(surface.guards ?? []), routeHandler(surface, route));
  }
  // A known path with a method it does not have: 405 naming the allowed ones, not 404.
  const methods = new Map<string, Set<string>>();
  for (const r of routes) methods.set(r.path, (methods.get(r.path) ?? new Set()).add(r.method));
  for (const [path, allowed] of methods) {
    const allow = allowHeader(allowed);
    router.all(expressPath(path), (_req, res) => {
      res.setHeader('Allow', allow);
      fail(res, 'method_not_allowed', `method not allowed here; allowed: ${allow}`);
    });
  }
}

const expressPath = (openApiPath: string) => openApiPath.replace(/\{(\w+)\}/g, ':$1');
