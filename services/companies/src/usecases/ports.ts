import type { TenantScope } from '@voiceapi/kit';

/**
 * What companies announce (the `companies.v1` stream, through the outbox): held before the write,
 * released after it, discarded when it did not happen. Agents write scripts from company profiles.
 */
export interface CompanyEvents {
  /** `change`: the fields set or removed, or `deleted`. */
  changed(scope: TenantScope, companyId: string, change: readonly string[] | 'deleted', at: Date): Promise<string[]>;
  release(ids: readonly string[]): Promise<void>;
  discard(ids: readonly string[]): Promise<void>;
}
