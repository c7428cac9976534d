import type { OpenedService } from '@voiceapi/kit/service';
import type { Config } from '../config';
import { CompanyStore } from '../store/company-store';

export type Stores = ReturnType<typeof openStores>;

export function openStores({ conn }: OpenedService<Config>) {
  return { companies: new CompanyStore(conn) };
}
