import { notFound, validationError } from '@voiceapi/kit/errors';
import { type PageAsked, type TenantScope } from '@voiceapi/kit/grpc';
import { type Page } from '@voiceapi/kit/mongo';
import type { CompanyStore } from '../store/company-store';
import type { ClearableField, Company, CompanyFields } from '../domain/company';
import type { CompanyEvents } from './ports';

/** The companies use cases: tenant-scoped CRUD on domain objects, for the tenant the gRPC adapter proved
 * (`TenantScope`). Shapes are validated at the gateway; this layer re-checks what the data's integrity
 * depends on, since other callers may appear. */
export class Companies {
  constructor(
    private readonly store: CompanyStore,
    private readonly events: CompanyEvents,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async list(scope: TenantScope, asked: PageAsked): Promise<Page<Company> & PageAsked> {
    return { ...(await this.store.list(scope, asked.page, asked.limit)), ...asked };
  }

  async create(scope: TenantScope, fields: Partial<CompanyFields>): Promise<Company> {
    if (!fields.name?.trim()) throw validationError('name is required', [{ path: 'name', message: 'required' }]);
    return this.store.create(scope, { ...fields, name: fields.name }, this.now());
  }

  async get(scope: TenantScope, id: string): Promise<Company> {
    const found = await this.store.get(scope, id);
    if (!found) throw notFound('company');
    return found;
  }

  async latest(scope: TenantScope): Promise<Company | null> {
    return this.store.latest(scope);
  }

  async update(
    scope: TenantScope,
    id: string,
    fields: Partial<CompanyFields>,
    clear: readonly ClearableField[] = [],
  ): Promise<Company> {
    if (fields.name !== undefined && fields.name.trim() === '') {
      throw validationError('name cannot be empty', [{ path: 'name', message: 'must not be empty' }]);
    }
    const both = clear.filter((f) => fields[f] !== undefined);
    if (both.length)
      throw validationError(
        'a field cannot be both set and removed',
        both.map((f) => ({ path: f, message: 'set and removed' })),
      );
    const now = this.now();
    const change = [...Object.keys(fields).filter((k) => fields[k as keyof CompanyFields] !== undefined), ...clear];
    const updated = await this.events.changed(
      scope,
      id,
      change,
      now,
      () => this.store.update(scope, id, fields, now, clear),
      this.store.updatedAt(scope, id, now),
    );
    if (!updated) throw notFound('company');
    return updated;
  }

  async delete(scope: TenantScope, id: string): Promise<void> {
    const deleted = await this.events.changed(
      scope,
      id,
      'deleted',
      this.now(),
      () => this.store.delete(scope, id),
      this.store.deleted(scope, id),
    );
    if (!deleted) throw notFound('company');
  }
}
