import type { ReadBack } from '@voiceapi/kit/events';
import type { TenantScope } from '@voiceapi/kit/grpc';

/**
 * What companies announce (the `companies.v1` stream): agents write scripts from company profiles.
 */
export interface CompanyEvents {
  /**
   * Runs `write` and announces its change (CompanyChanged) only if it happened: `write` answers
   * null or false when there was no such company; `readBack` (from the store) tells, should the
   * write fail part-way. `change`: the fields set or removed, or `deleted`.
   */
  changed<R>(
    scope: TenantScope,
    companyId: string,
    change: readonly string[] | 'deleted',
    at: Date,
    write: () => Promise<R>,
    readBack: ReadBack,
  ): Promise<R>;
}
