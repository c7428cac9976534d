import type { OpenedService } from '@voiceapi/kit/service';
import type { Config } from '../config';
import { AuditStore } from '../store/audit-store';
import { CallStore } from '../store/call-store';
import { WalletStore } from '../store/wallet-store';

export type Stores = ReturnType<typeof openStores>;

export function openStores({ conn }: OpenedService<Config>) {
  return { store: new WalletStore(conn), calls: new CallStore(conn), audits: new AuditStore(conn) };
}
