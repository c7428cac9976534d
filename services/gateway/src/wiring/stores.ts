import type { OpenedService } from '@voiceapi/kit/service';
import type { Config } from '../config';
import { ApiKeyStore } from '../store/api-keys';
import { IdempotencyStore } from '../store/idempotency';
import { KeyRequestStore } from '../store/key-requests';
import { SettingsStore } from '../store/settings';
import { StreamLeaseStore } from '../store/stream-leases';
import { TenantStore } from '../store/tenants';

export type Stores = ReturnType<typeof openStores>;

export function openStores({ conn }: OpenedService<Config>) {
  return {
    tenants: new TenantStore(conn),
    apiKeys: new ApiKeyStore(conn),
    requests: new KeyRequestStore(conn),
    settings: new SettingsStore(conn),
    idempotency: new IdempotencyStore(conn),
    streamLeases: new StreamLeaseStore(conn),
  };
}
