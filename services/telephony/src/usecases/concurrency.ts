import { validationError } from '@voiceapi/kit/errors';
import { type TenantScope } from '@voiceapi/kit/grpc';
import type { TenantSettingsStore } from '../store/tenant-settings-store';

export const MAX_LINES = 1_000;

/** A tenant's concurrency package (operator): how many calls it may have at once, in and out. */
export class Concurrency {
  constructor(
    private readonly settings: TenantSettingsStore,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Lines above a lowered limit are kept by their calls until they end. */
  async set(scope: TenantScope, maxConcurrentCalls: number): Promise<number> {
    if (!Number.isInteger(maxConcurrentCalls) || maxConcurrentCalls < 1 || maxConcurrentCalls > MAX_LINES) {
      throw validationError('invalid concurrency', [
        { path: 'maxConcurrentCalls', message: `must be a whole number from 1 to ${MAX_LINES}` },
      ]);
    }
    return this.settings.setMaxConcurrentCalls(scope, maxConcurrentCalls, this.now());
  }
}
