import { commonReasons, notFound } from '@voiceapi/kit/errors';
import { requireTenant, type KeyMode, type TenantScope } from '@voiceapi/kit/grpc';
import { Types } from 'mongoose';
import { generateKey, hashKey, keyHint } from '../auth/key-format';
import { DEFAULT_SCOPES, type Scope } from '../auth/scopes';
import type { ControlPlane } from '../control/control-plane';
import type { ApiKeyRecord, ApiKeyStore, KeyStatus, NewApiKey } from '../store/api-keys';
import type { KeyRequestRecord, KeyRequestStore, RequestStatus } from '../store/key-requests';
import type { TenantRecord, TenantStore } from '../store/tenants';

/** A new key and its plaintext, which is returned this once and never stored. */
export interface IssuedKey {
  apiKey: ApiKeyRecord;
  key: string;
}

export interface KeyGrant {
  name: string;
  mode: KeyMode;
  scopes?: Scope[];
  purpose?: string;
  rateLimitPerSecond?: number;
}

/** What platform operators do: tenants, key requests and approvals, key changes, the kill switch. */
export class OperatorUseCases {
  constructor(
    private readonly tenants: TenantStore,
    private readonly keys: ApiKeyStore,
    private readonly requests: KeyRequestStore,
    private readonly control: ControlPlane,
    private readonly pepper: string,
  ) {}

  createTenant(name: string): Promise<TenantRecord> {
    return this.tenants.create(name);
  }

  /** Request and approval in one step; the plaintext is returned this once and never stored. */
  async issueKey(tenantId: string, grant: KeyGrant, requestId?: string, id?: Types.ObjectId): Promise<IssuedKey> {
    const scope = await this.tenantScope(tenantId, grant.mode);
    const key = generateKey(grant.mode);
    const doc: NewApiKey = {
      name: grant.name,
      mode: grant.mode,
      scopes: [...new Set(grant.scopes ?? DEFAULT_SCOPES)],
      status: 'active',
      keyHash: hashKey(key, this.pepper),
      keyHint: keyHint(key),
      ...(grant.purpose !== undefined && { purpose: grant.purpose }),
      ...(grant.rateLimitPerSecond !== undefined && { rateLimitPerSecond: grant.rateLimitPerSecond }),
      ...(requestId !== undefined && { requestId }),
      ...(id !== undefined && { _id: id }),
    };
    return { apiKey: await this.keys.insert(scope, doc), key };
  }

  async fileKeyRequest(
    tenantId: string,
    req: { name: string; mode: KeyMode; purpose: string; scopes?: Scope[] },
  ): Promise<KeyRequestRecord> {
    const scope = await this.tenantScope(tenantId, req.mode);
    return this.requests.create(scope, { ...req, scopes: [...new Set(req.scopes ?? DEFAULT_SCOPES)] });
  }

  listRequests(status?: RequestStatus): Promise<KeyRequestRecord[]> {
    return this.requests.list(status);
  }

  /** Exactly one approval wins: the request leaves `pending` atomically before the key is made. */
  async approve(requestId: string, scopes?: Scope[]): Promise<IssuedKey> {
    const keyId = new Types.ObjectId();
    const decided = await this.requests.decide(requestId, { status: 'approved', apiKeyId: keyId.toString() });
    if (!decided) {
      if (await this.requests.get(requestId))
        throw commonReasons.error('conflict', 'this request has already been decided');
      throw notFound('key request');
    }
    try {
      return await this.issueKey(
        decided.tenantId,
        { name: decided.name, mode: decided.mode, purpose: decided.purpose, scopes: scopes ?? decided.scopes },
        requestId,
        keyId,
      );
    } catch (err) {
      await this.requests.reopen(requestId);
      throw err;
    }
  }

  async reject(requestId: string, reason?: string): Promise<KeyRequestRecord> {
    const decided = await this.requests.decide(requestId, {
      status: 'rejected',
      ...(reason !== undefined && { reason }),
    });
    if (!decided) {
      if (await this.requests.get(requestId))
        throw commonReasons.error('conflict', 'this request has already been decided');
      throw notFound('key request');
    }
    return decided;
  }

  /** Rename or (de)activate. Renaming never changes the secret. Every replica drops the key at once. */
  async updateKey(keyId: string, changes: { status?: KeyStatus; name?: string }): Promise<ApiKeyRecord> {
    const existing = await this.keys.get(keyId);
    if (!existing) throw notFound('API key');
    const updated = await this.control.changeKey(keyId, existing.tenantId, () => this.keys.update(keyId, changes));
    if (!updated) throw notFound('API key');
    return updated;
  }

  killSwitch(): boolean {
    return this.control.killSwitch;
  }

  async setKillSwitch(enabled: boolean): Promise<boolean> {
    await this.control.setKillSwitch(enabled);
    return enabled;
  }

  /** Before acting for a tenant in another service: an unknown tenant is 404 `not_found`. */
  async assertTenant(tenantId: string): Promise<void> {
    if (!(await this.tenants.exists(tenantId))) throw notFound('tenant');
  }

  /** The tenant's scope for writing what it will own; the tenant must exist. */
  private async tenantScope(tenantId: string, mode: KeyMode): Promise<TenantScope> {
    await this.assertTenant(tenantId);
    return requireTenant({ tenantId, keyMode: mode });
  }
}
