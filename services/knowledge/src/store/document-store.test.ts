import { unservedShapes } from '@voiceapi/kit';
import { documentQueryShapes, documentSchema } from './document-store';

it('every query of the documents store has an index that serves it', () => {
  expect(unservedShapes(documentSchema, documentQueryShapes)).toEqual([]);
});
