import { announcerInMemory } from '../../../../libs/kit/test/announcer-in-memory';
import { type ReadBack } from '@voiceapi/kit/events';
import { requireTenant } from '@voiceapi/kit/grpc';
import { type Logger } from '@voiceapi/kit/service';
import { documentEvents } from '../events/publish';
import type { DocumentStore } from '../store/document-store';
import { Documents } from './documents';
import type { Wallet } from './ports';

const scope = requireTenant({ tenantId: 't1', keyMode: 'live' });
const gone: ReadBack = { collection: 'knowledge_documents', filter: { _id: 'f1' }, applied: 'absent' };

/** A store holding document f1 whose erase fails part-way (the store went away mid-write). */
function failingStore(): DocumentStore {
  return {
    get: async () => ({ fileId: 'f1' }),
    erase: () => Promise.reject(new Error('connection reset')),
    erased: () => gone,
  } as unknown as DocumentStore;
}

const documents = (store: DocumentStore, there: boolean) => {
  const outbox = announcerInMemory(() => there);
  const uc = new Documents({
    store,
    wallet: {} as Wallet,
    events: documentEvents(outbox),
    maxFileBytes: 1,
    log: {} as Logger,
  });
  return { uc, outbox };
};

// Issue: a delete whose erase threw left its event held, and the relay published it some 30 s
// later whether or not the document was gone. Now the store is read back at once.
describe('Documents.delete when the erase fails part-way', () => {
  it('announces nothing if the document is still there', async () => {
    const { uc, outbox } = documents(failingStore(), false);
    await expect(uc.delete(scope, 'f1')).rejects.toThrow('connection reset');
    expect({ held: [...outbox.held], published: outbox.published }).toEqual({ held: [], published: [] });
  });

  it('announces the delete if the document is gone', async () => {
    const { uc, outbox } = documents(failingStore(), true);
    await expect(uc.delete(scope, 'f1')).rejects.toThrow('connection reset');
    expect({ held: [...outbox.held], published: outbox.published }).toEqual({
      held: [],
      published: ['document-deleted:f1'],
    });
  });
});
