import { commonReasons, notFound, requireTenant, type KeyMode, type TenantScope } from '@voiceapi/kit';
import { Types } from 'mongoose';
import { generateKey, hashKey, keyHint } from '../auth/key-format';
import { DEFAULT_SCOPES, type Scope } from '../auth/scopes';
import type { ControlPlane } from '../control/control-plane';
import { apiKeyJson, type ApiKeyStore, type KeyStatus, type NewApiKey } from '../store/api-keys';
import { keyRequestJson, type KeyRequestStore, type RequestStatus } from '../store/key-requests';
import { tenantJson, type TenantStore } from '../store/tenants';

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

  async createTenant(name: string) {
    return { tenant: tenantJson(await this.tenants.create(name)) };
  }

  /** Request and approval in one step; the plaintext is returned this once and never stored. */
  async issueKey(tenantId: string, grant: KeyGrant, requestId?: string, id?: Types.ObjectId) {
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
    const record = await this.keys.insert(scope, doc);
    return { apiKey: apiKeyJson(record), key };
  }

  async fileKeyRequest(tenantId: string, req: { name: string; mode: KeyMode; purpose: string; scopes?: Scope[] }) {
    const scope = await this.tenantScope(tenantId, req.mode);
    const record = await this.requests.create(scope, { ...req, scopes: [...new Set(req.scopes ?? DEFAULT_SCOPES)] });
    return { request: keyRequestJson(record) };
  }

  async listRequests(status?: RequestStatus) {
    return { requests: (await this.requests.list(status)).map(keyRequestJson) };
  }

  /** Exactly one approval wins: the request leaves `pending` atomically before the key is made. */
  async approve(requestId: string, scopes?: Scope[]) {
    const keyId = new Types.ObjectId();
    const decided = await this.requests.decide(requestId, { status: 'approved', apiKeyId: keyId.toString() });
    if (!decided) {
      if (await this.requests.get(requestId)) throw commonReasons.error('conflict', 'this request has already been decided');
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

  async reject(requestId: string, reason?: string) {
    const decided = await this.requests.decide(requestId, { status: 'rejected', ...(reason !== undefined && { reason }) });
    if (!decided) {
      if (await this.requests.get(requestId)) throw commonReasons.error('conflict', 'this request has already been decided');
      throw notFound('key request');
    }
    return { request: keyRequestJson(decided) };
  }

  /** Rename or (de)activate. Renaming never changes the secret. Every replica drops the key at once. */
  async updateKey(keyId: string, changes: { status?: KeyStatus; name?: string }) {
    const existing = await this.keys.get(keyId);
    if (!existing) throw notFound('API key');
    const updated = await this.control.changeKey(keyId, existing.tenantId, () => this.keys.update(keyId, changes));
    if (!updated) throw notFound('API key');
    return { apiKey: apiKeyJson(updated) };
  }

  killSwitch() {
    return { enabled: this.control.killSwitch };
  }

  async setKillSwitch(enabled: boolean) {
    await this.control.setKillSwitch(enabled);
    return { enabled };
  }

  /** The tenant's scope for writing what it will own; the tenant must exist. */
  private async tenantScope(tenantId: string, mode: KeyMode): Promise<TenantScope> {
    if (!(await this.tenants.exists(tenantId))) throw notFound('tenant');
    return requireTenant({ tenantId, keyMode: mode });
  }
}
