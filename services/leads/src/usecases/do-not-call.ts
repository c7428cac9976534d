import { validationError } from '@voiceapi/kit/errors';
import { type TenantScope } from '@voiceapi/kit/grpc';
import { parsePhone } from '../domain/phone';
import type { DoNotCallStore } from '../store/do-not-call-store';
import type { DoNotCallEntry } from '../domain/do-not-call';

/** The operator's additions to the do-not-call lists (removal is not offered: an opt-out stands). */
export class DoNotCall {
  constructor(
    private readonly store: DoNotCallStore,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async addTenant(scope: TenantScope, phone: string): Promise<{ entry: DoNotCallEntry; created: boolean }> {
    return this.store.addTenant(scope, await e164(phone), 'operator', this.now());
  }

  async addPlatform(phone: string): Promise<{ entry: DoNotCallEntry; created: boolean }> {
    return this.store.addPlatform(await e164(phone), 'operator', this.now());
  }
}

async function e164(raw: string): Promise<string> {
  const parsed = await parsePhone(raw);
  if (!parsed.ok) throw validationError(`phone ${parsed.message}`, [{ path: 'phone', message: parsed.message }]);
  return parsed.phone.e164;
}
