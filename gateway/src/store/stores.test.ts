import { unservedShapes } from '@voiceapi/kit';
import { apiKeyQueryShapes, apiKeySchema } from './api-keys';
import { idempotencyQueryShapes, idempotencySchema } from './idempotency';
import { keyRequestQueryShapes, keyRequestSchema } from './key-requests';

describe("the gateway's stores", () => {
  it.each([
    ['api keys', apiKeySchema, apiKeyQueryShapes],
    ['key requests', keyRequestSchema, keyRequestQueryShapes],
    ['idempotency records', idempotencySchema, idempotencyQueryShapes],
  ] as const)('%s have an index for every query they run on MongoDB 7', (_name, schema, shapes) => {
    expect(unservedShapes(schema, shapes)).toEqual([]);
  });
});
