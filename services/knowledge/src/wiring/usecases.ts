import type { Outbox } from '@voiceapi/kit/events';
import type { OpenedService } from '@voiceapi/kit/service';
import type { Config } from '../config';
import { documentEvents } from '../events/publish';
import { Documents } from '../usecases/documents';
import type { Clients } from './clients';
import type { Stores } from './stores';

export function buildUseCases({ cfg, log }: OpenedService<Config>, stores: Stores, clients: Clients, outbox: Outbox) {
  return new Documents({
    store: stores.documents,
    wallet: clients.wallet,
    events: documentEvents(outbox),
    maxFileBytes: cfg.KNOWLEDGE_MAX_FILE_BYTES,
    log,
  });
}
