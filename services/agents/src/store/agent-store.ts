import { type ReadBack } from '@voiceapi/kit/events';
import { scopeOfRecord, type TenantScope } from '@voiceapi/kit/grpc';
import { modelOf, objectIds, ReadCache, TenantCollection, type Page, type QueryShape } from '@voiceapi/kit/mongo';
import { type Logger } from '@voiceapi/kit/service';
import { Schema, Types, type Connection } from 'mongoose';
import type { Agent, AgentFields } from '../domain/agent';

/** The stored document: the agent, with its custom-API secret sealed (never in an `Agent`). */
interface AgentDoc extends Omit<Agent, 'id' | 'customApiSecretSet'> {
  _id: Types.ObjectId;
  tenantId: string;
  /** SecretBox-sealed, bound to `<tenant>:<agent>`. */
  customApiSecret?: string;
}

const knowledgeRef = new Schema(
  { fileId: String, fileName: String, title: String, knowledgebaseId: String, wordCount: Number },
  { _id: false },
);
const doctor = new Schema({ id: String, name: String, specialty: String, branchId: String }, { _id: false });
const script = new Schema(
  {
    text: String,
    opening: String,
    sources: [new Schema({ kind: String, id: String, title: String }, { _id: false })],
    generator: String,
    generatedAt: Date,
  },
  { _id: false },
);

export const agentSchema = new Schema<AgentDoc>(
  {
    tenantId: { type: String, required: true },
    name: { type: String, required: true },
    category: String,
    phoneNumber: { type: String, required: true },
    phoneNumberId: { type: String, required: true },
    status: { type: String, required: true },
    activatedAt: Date,
    scriptStatus: { type: String, required: true },
    greetingMessage: String,
    companyId: String,
    selectedKnowledgebases: [knowledgeRef],
    appointmentScope: { type: String, required: true },
    branchId: String,
    doctorId: String,
    slotsEnabled: Boolean,
    bookingEnabled: Boolean,
    doctorsSyncEnabled: Boolean,
    validateHookEnabled: Boolean,
    doctors: [doctor],
    doctorsLastSyncedAt: Date,
    customApiBaseUrl: String,
    customApiSecret: String,
    customApiTimeoutMs: { type: Number, required: true },
    script,
    scriptError: String,
    scriptGeneration: String,
    sandbox: { type: Boolean, required: true },
    createdAt: { type: Date, required: true },
    updatedAt: { type: Date, required: true },
  },
  { collection: 'agents', versionKey: false, minimize: true },
);
// Serves `newest` (the list page).
agentSchema.index({ tenantId: 1, createdAt: -1, _id: -1 });
// Serves `onNumber` (one scope per number).
agentSchema.index({ tenantId: 1, phoneNumberId: 1 });
// Serves `usingCompany` (a changed company makes its agents' scripts stale).
agentSchema.index({ tenantId: 1, companyId: 1 });
// Serves `usingDocument` (a deleted document leaves the agents that linked it).
agentSchema.index({ tenantId: 1, 'selectedKnowledgebases.fileId': 1 });

const NEWEST_FIRST = { createdAt: -1, _id: -1 } as const;
export const agentQueryShapes: QueryShape[] = [
  { name: 'newest', equality: ['tenantId'], sort: NEWEST_FIRST },
  { name: 'onNumber', equality: ['tenantId', 'phoneNumberId'] },
  { name: 'usingDocument', equality: ['tenantId', 'selectedKnowledgebases.fileId'] },
  { name: 'usingCompany', equality: ['tenantId', 'companyId'] },
];

function toAgent(doc: AgentDoc): Agent {
  const { _id, tenantId: _tenant, customApiSecret, ...rest } = doc;
  return { id: _id.toString(), ...rest, customApiSecretSet: customApiSecret !== undefined };
}

export type StoredFields = Partial<Omit<AgentDoc, '_id' | 'tenantId' | 'createdAt'>>;

/**
 * Inbound agents, tenant-scoped by construction. The reads on a call's path (the agents on a
 * number, an agent with its sealed secret: every inbound call and every custom-API call) are
 * answered from a cache that this process empties when it changes an agent; another replica's
 * change is seen once the cache's TTL has passed (no change stream, decision 0141). The tenant
 * API's reads go to the store.
 */
export class AgentStore {
  private readonly agents: TenantCollection<AgentDoc>;
  readonly cache: ReadCache<AgentDoc[]>;

  constructor(conn: Connection, opts: { cacheTtlMs: number; log: Logger }) {
    this.agents = new TenantCollection(modelOf(conn, 'Agent', agentSchema), objectIds, agentQueryShapes);
    this.cache = new ReadCache({ ttlMs: opts.cacheTtlMs, log: opts.log });
  }

  /** Every agent of every tenant with a sealed secret, a page at a time (the key rotation's pass). */
  async *sealedSecrets(): AsyncGenerator<{ scope: TenantScope; id: string; sealed: string }[]> {
    for await (const page of this.agents
      .crossTenant('the key rotation re-seals the secrets of every tenant')
      .pages({ customApiSecret: { $exists: true } })) {
      yield page.map((d) => ({
        scope: scopeOfRecord(d.tenantId),
        id: d._id.toHexString(),
        sealed: d.customApiSecret!,
      }));
    }
  }

  /** Replaces a sealed secret that is still the one read (false when it changed meanwhile). */
  async replaceSecret(scope: TenantScope, id: string, sealed: string, next: string): Promise<boolean> {
    const replaced =
      (await this.agents.updateById(
        scope,
        id,
        { $set: { customApiSecret: next } },
        { where: { customApiSecret: sealed } },
      )) !== null;
    this.cache.forgetAll();
    return replaced;
  }

  newId(): string {
    return new Types.ObjectId().toHexString();
  }

  async create(scope: TenantScope, id: string, doc: Omit<AgentDoc, '_id' | 'tenantId'>): Promise<Agent> {
    const created = toAgent(await this.agents.insert(scope, { ...doc, _id: new Types.ObjectId(id) }));
    this.cache.forgetAll();
    return created;
  }

  async get(scope: TenantScope, id: string): Promise<Agent | null> {
    const doc = await this.agents.findById(scope, id);
    return doc && toAgent(doc);
  }

  /**
   * The agent and its sealed custom-API secret in one read, for the one place that opens it
   * (every custom-API call asks: cached, the secret still sealed).
   */
  async getWithSealedSecret(
    scope: TenantScope,
    id: string,
  ): Promise<{ agent: Agent; sealedSecret: string | undefined } | null> {
    const found = await this.cache.get(`${scope.tenantId}:agent:${id}`, async () => {
      const doc = await this.agents.findById(scope, id);
      return doc ? [doc] : null;
    });
    const doc = found?.[0];
    return doc ? { agent: toAgent(doc), sealedSecret: doc.customApiSecret } : null;
  }

  async list(scope: TenantScope, page: number, limit: number): Promise<Page<Agent>> {
    const res = await this.agents.page(scope, {}, { sort: NEWEST_FIRST, page, limit });
    return { ...res, items: res.items.map(toAgent) };
  }

  /** The tenant's agents on a number (every inbound call asks: cached). */
  async onNumber(scope: TenantScope, phoneNumberId: string): Promise<Agent[]> {
    const docs = await this.cache.get(`${scope.tenantId}:number:${phoneNumberId}`, () =>
      this.agents.find(scope, { phoneNumberId }, { limit: 1000 }),
    );
    return (docs ?? []).map(toAgent);
  }

  /** The tenant's agents that link this document. */
  async usingDocument(scope: TenantScope, fileId: string): Promise<Agent[]> {
    return (await this.agents.find(scope, { 'selectedKnowledgebases.fileId': fileId }, { limit: 1000 })).map(toAgent);
  }

  /** The tenant's agents written for this company. */
  async usingCompany(scope: TenantScope, companyId: string): Promise<Agent[]> {
    return (await this.agents.find(scope, { companyId }, { limit: 1000 })).map(toAgent);
  }

  /** Removes a document from an agent's links, and sets fields with it (null when the agent is gone). */
  async dropDocument(scope: TenantScope, id: string, fileId: string, set: StoredFields): Promise<Agent | null> {
    const doc = await this.agents.updateById(scope, id, { $pull: { selectedKnowledgebases: { fileId } }, $set: set });
    this.cache.forgetAll();
    return doc && toAgent(doc);
  }

  /** Sets and unsets fields; `where` makes it conditional (null when it did not hold). */
  /** A script write happened when the agent holds that generation's script (by the time it was written). */
  scriptStored(scope: TenantScope, id: string, generation: string, generatedAt: Date): ReadBack {
    return this.agents.readBack(scope, id, 'present', {
      scriptGeneration: generation,
      'script.generatedAt': generatedAt,
    });
  }

  async update(
    scope: TenantScope,
    id: string,
    set: StoredFields,
    unset: readonly string[] = [],
    where: Record<string, unknown> = {},
  ): Promise<Agent | null> {
    const doc = await this.agents.updateById(
      scope,
      id,
      { $set: set, ...(unset.length > 0 && { $unset: Object.fromEntries(unset.map((f) => [f, 1])) }) },
      { where },
    );
    // This process reads its own write at once; the change stream tells the other replicas.
    this.cache.forgetAll();
    return doc && toAgent(doc);
  }
}

export type { AgentFields };
