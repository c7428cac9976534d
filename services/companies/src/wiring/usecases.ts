import type { Outbox } from '@voiceapi/kit/events';
import { companyEvents } from '../events/publish';
import { Companies } from '../usecases/companies';
import type { Stores } from './stores';

export function buildUseCases({ companies }: Stores, outbox: Outbox) {
  return new Companies(companies, companyEvents(outbox));
}
