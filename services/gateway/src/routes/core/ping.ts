import { defineRoute } from '../../http/route';
import { z } from '../../http/zod';

const Ping = z
  .object({
    ok: z.literal(true),
    tenantId: z.string(),
    keyId: z.string(),
    mode: z.enum(['live', 'sandbox']),
    scopes: z.array(z.string()),
  })
  .openapi('Ping');

export const pingRoutes = [
  defineRoute({
    method: 'get',
    path: '/ping',
    tag: 'Core',
    summary: 'Check a key',
    description: 'Answers who the key belongs to, its mode and scopes. Touches no backing service.',
    responses: { 200: { description: 'The key is valid', schema: Ping } },
    handler: (_input, { auth }) =>
      Promise.resolve({
        status: 200,
        body: { ok: true, tenantId: auth!.tenantId, keyId: auth!.keyId, mode: auth!.mode, scopes: [...auth!.scopes] },
      }),
  }),
];
