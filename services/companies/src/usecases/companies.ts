import { notFound, requireTenant, validationError, type CallContext, type Page, type TenantScope } from '@voiceapi/kit';
import type { ClearableField, Company, CompanyFields, CompanyStore } from '../store/company-store';

const MAX_LIMIT = 100;

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

/** The companies use cases: tenant-scoped CRUD on domain objects. Shapes are validated at the
 * gateway; this layer re-checks what the data's integrity depends on, since other callers may appear. */
export class CompanyUseCases {
  constructor(
    private readonly store: CompanyStore,
    private readonly events: CompanyEvents,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async list(ctx: CallContext, page: number, limit: number): Promise<Page<Company> & { page: number; limit: number }> {
    const scope = requireTenant(ctx);
    const safePage = Math.max(1, page || 1);
    const safeLimit = Math.min(MAX_LIMIT, Math.max(1, limit || 25));
    return { ...(await this.store.list(scope, safePage, safeLimit)), page: safePage, limit: safeLimit };
  }

  async create(ctx: CallContext, fields: Partial<CompanyFields>): Promise<Company> {
    const scope = requireTenant(ctx);
    if (!fields.name?.trim()) throw validationError('name is required', [{ path: 'name', message: 'required' }]);
    return this.store.create(scope, { ...fields, name: fields.name }, this.now());
  }

  async get(ctx: CallContext, id: string): Promise<Company> {
    const found = await this.store.get(requireTenant(ctx), id);
    if (!found) throw notFound('company');
    return found;
  }

  async latest(ctx: CallContext): Promise<Company | null> {
    return this.store.latest(requireTenant(ctx));
  }

  async update(ctx: CallContext, id: string, fields: Partial<CompanyFields>, clear: readonly ClearableField[] = []): Promise<Company> {
    const scope = requireTenant(ctx);
    if (fields.name !== undefined && fields.name.trim() === '') {
      throw validationError('name cannot be empty', [{ path: 'name', message: 'must not be empty' }]);
    }
    const both = clear.filter((f) => fields[f] !== undefined);
    if (both.length) throw validationError('a field cannot be both set and removed', both.map((f) => ({ path: f, message: 'set and removed' })));
    const now = this.now();
    const held = await this.events.changed(scope, id, [...Object.keys(fields).filter((k) => fields[k as keyof CompanyFields] !== undefined), ...clear], now);
    const updated = await this.store.update(scope, id, fields, now, clear);
    if (!updated) {
      await this.events.discard(held);
      throw notFound('company');
    }
    await this.events.release(held);
    return updated;
  }

  async delete(ctx: CallContext, id: string): Promise<void> {
    const scope = requireTenant(ctx);
    const held = await this.events.changed(scope, id, 'deleted', this.now());
    if (!(await this.store.delete(scope, id))) {
      await this.events.discard(held);
      throw notFound('company');
    }
    await this.events.release(held);
  }
}
