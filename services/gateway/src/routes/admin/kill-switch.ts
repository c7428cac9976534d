import type { OperatorUseCases } from '../../operator/operator';
import { defineRoute } from '../../http/route';
import { z } from '../../http/zod';
import { KillSwitch } from './schemas';

/** The global kill switch of the tenant API. */
export function killSwitchRoutes(op: OperatorUseCases) {
  return [
    defineRoute({
      method: 'get',
      path: '/kill-switch',
      tag: 'Kill switch',
      summary: 'Read the global kill switch',
      responses: { 200: { description: 'Current state', schema: KillSwitch } },
      handler: () => Promise.resolve({ status: 200, body: { enabled: op.killSwitch() } }),
    }),
    defineRoute({
      method: 'put',
      path: '/kill-switch',
      tag: 'Kill switch',
      summary: 'Turn the tenant API off or on',
      description:
        'While enabled, every /api/v1 call answers 503 `api_globally_disabled`; every replica obeys within a second.',
      body: z.strictObject({ enabled: z.boolean() }),
      responses: { 200: { description: 'New state', schema: KillSwitch } },
      handler: async ({ body }) => ({ status: 200, body: { enabled: await op.setKillSwitch(body.enabled) } }),
    }),
  ];
}
