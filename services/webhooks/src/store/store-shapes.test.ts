import { unservedShapes } from '@voiceapi/kit';
import { attemptQueryShapes, attemptSchema, deliveryQueryShapes, deliverySchema } from './delivery-store';
import { endpointQueryShapes, endpointSchema } from './endpoint-store';
import { claimQueryShapes, claimSchema, dispatcherQueryShapes, dispatcherSchema, queueQueryShapes, queueSchema } from './queue-store';

it.each([
  ['endpoints', endpointSchema, endpointQueryShapes],
  ['deliveries', deliverySchema, deliveryQueryShapes],
  ['delivery attempts', attemptSchema, attemptQueryShapes],
  ['delivery queue', queueSchema, queueQueryShapes],
  ['delivery claims', claimSchema, claimQueryShapes],
  ['dispatchers', dispatcherSchema, dispatcherQueryShapes],
] as const)('every query of the %s store has an index that serves it', (_name, schema, shapes) => {
  expect(unservedShapes(schema, shapes)).toEqual([]);
});
