import { unservedShapes } from '@voiceapi/kit';
import { callQueryShapes, callSchema } from './call-store';
import { queuedQueryShapes, queuedSchema } from './dial-queue-store';
import { lineQueryShapes, lineSchema } from './line-store';
import { numberQueryShapes, numberSchema } from './number-store';
import { dirtyQueryShapes, dirtySchema, rollupQueryShapes, rollupSchema } from './rollup-store';

describe('telephony stores', () => {
  it.each([
    ['calls', callSchema, callQueryShapes],
    ['dial queue', queuedSchema, queuedQueryShapes],
    ['lines', lineSchema, lineQueryShapes],
    ['numbers', numberSchema, numberQueryShapes],
    ['rollups', rollupSchema, rollupQueryShapes],
    ['rollup marks', dirtySchema, dirtyQueryShapes],
  ] as const)('%s: an index serves every query it runs (equality, then sort, then range) on MongoDB 7', (_name, schema, shapes) => {
    expect(unservedShapes(schema, shapes)).toEqual([]);
  });
});
