import { unservedShapes } from '@voiceapi/kit';
import { documentQueryShapes, documentSchema, pendingQueryShapes, pendingSchema } from './document-store';

it('every query of the documents store has an index that serves it', () => {
  expect(unservedShapes(documentSchema, documentQueryShapes)).toEqual([]);
  expect(unservedShapes(pendingSchema, pendingQueryShapes)).toEqual([]);
});
