// Over 300 lines because the agents service's use cases share the agent's validation and its knowledge and company look-ups.
import { randomUUID } from 'node:crypto';
import { type SecretBox } from '@voiceapi/kit/crypto';
import { notFound, validationError } from '@voiceapi/kit/errors';
import { type PageAsked, type TenantScope } from '@voiceapi/kit/grpc';
import { type Page } from '@voiceapi/kit/mongo';
import { type Logger } from '@voiceapi/kit/service';
import type { CustomApi, CustomApiTarget } from '../custom-api/custom-api';
import {
  checkOneScopePerNumber,
  checkScope,
  checkTimeout,
  DEFAULT_CUSTOM_API_TIMEOUT_MS,
  nextStatus,
  type Agent,
  type AgentFields,
  type ClearableField,
  type Doctor,
  type KnowledgeRef,
  type ScriptSource,
} from '../domain/agent';
import { agentsReasons } from '../reasons';
import { openingLine, type ScriptGenerator } from '../script/generator';
import type { AgentStore, StoredFields } from '../store/agent-store';
import type { ScriptJob, ScriptJobStore } from '../store/script-job-store';
import { customApiTarget, secretBinding } from './custom-api-target';
import type { AgentEvents, Companies, Knowledge, OwnedNumbers } from './ports';

/** Characters of a document's text read for a script. */
const SCRIPT_TEXT_CHARS = 20_000;

export interface AgentDeps {
  agents: AgentStore;
  jobs: ScriptJobStore;
  numbers: OwnedNumbers;
  companies: Companies;
  knowledge: Knowledge;
  events: AgentEvents;
  customApi: CustomApi;
  secrets: SecretBox;
  generator: ScriptGenerator;
  maxKnowledge: number;
  claimMs: number;
  log: Logger;
  now?: () => Date;
}

/**
 * Inbound agents: creation and update check everything an agent stands on (an owned number, the
 * tenant's company, its documents, a callable custom API) so that activation only has to check
 * the number is still owned and the script is ready.
 */
export class Agents {
  constructor(private readonly d: AgentDeps) {}

  private now(): Date {
    return this.d.now?.() ?? new Date();
  }

  async list(scope: TenantScope, asked: PageAsked): Promise<Page<Agent> & PageAsked> {
    return { ...(await this.d.agents.list(scope, asked.page, asked.limit)), ...asked };
  }

  async get(scope: TenantScope, id: string): Promise<Agent> {
    return this.mustGet(scope, id);
  }

  async create(scope: TenantScope, f: AgentFields): Promise<Agent> {
    if (!f.name?.trim()) throw validationError('name is required', [{ path: 'name', message: 'required' }]);
    if (!f.phoneNumber && !f.phoneNumberId)
      throw validationError('phoneNumber or phoneNumberId is required', [
        { path: 'phoneNumber', message: 'one of phoneNumber or phoneNumberId is required' },
      ]);
    const appointmentScope = f.appointmentScope ?? 'global';
    checkScope(appointmentScope, f.branchId, f.doctorId);
    checkTimeout(f.customApiTimeoutMs);
    const baseUrl = f.customApiBaseUrl !== undefined ? this.d.customApi.checkBaseUrl(f.customApiBaseUrl) : undefined;
    const number = await this.ownedNumber(scope, f);
    checkOneScopePerNumber(await this.d.agents.onNumber(scope, number.id), undefined, appointmentScope);
    const companyId =
      f.companyId !== undefined ? await this.company(scope, f.companyId) : (await this.d.companies.latest(scope))?.id;
    const knowledge = await this.documents(scope, f.selectedKnowledgebases ?? []);

    const id = this.d.agents.newId();
    const now = this.now();
    return this.d.agents.create(scope, id, {
      name: f.name.trim(),
      ...(f.category !== undefined && { category: f.category }),
      phoneNumber: number.phoneNumber,
      phoneNumberId: number.id,
      status: 'inactive',
      scriptStatus: 'none',
      ...(f.greetingMessage !== undefined && { greetingMessage: f.greetingMessage }),
      ...(companyId !== undefined && { companyId }),
      selectedKnowledgebases: knowledge,
      appointmentScope,
      ...(f.branchId !== undefined && { branchId: f.branchId }),
      ...(f.doctorId !== undefined && { doctorId: f.doctorId }),
      slotsEnabled: f.slotsEnabled ?? false,
      bookingEnabled: f.bookingEnabled ?? false,
      doctorsSyncEnabled: f.doctorsSyncEnabled ?? false,
      validateHookEnabled: f.validateHookEnabled ?? false,
      ...(baseUrl !== undefined && { customApiBaseUrl: baseUrl }),
      ...(f.customApiSecret && { customApiSecret: this.d.secrets.seal(f.customApiSecret, secretBinding(scope, id)) }),
      customApiTimeoutMs: f.customApiTimeoutMs ?? DEFAULT_CUSTOM_API_TIMEOUT_MS,
      sandbox: scope.mode === 'sandbox',
      createdAt: now,
      updatedAt: now,
    });
  }

  /**
   * Changes fields. A change to what the script is written from (name, category, greeting,
   * company, documents, scope, booking flags) starts a new generation when the agent has a script:
   * an active agent keeps answering with its last ready script until the new one is ready.
   */
  async update(scope: TenantScope, id: string, f: AgentFields, clear: readonly ClearableField[]): Promise<Agent> {
    const current = await this.mustGet(scope, id);
    const both = clear.filter((c) => f[c] !== undefined);
    if (both.length)
      throw validationError(
        'a field cannot be both set and removed',
        both.map((c) => ({ path: c, message: 'set and removed' })),
      );
    if (f.name !== undefined && !f.name.trim())
      throw validationError('name cannot be empty', [{ path: 'name', message: 'must not be empty' }]);
    checkTimeout(f.customApiTimeoutMs);
    const set: StoredFields = { updatedAt: this.now() };
    for (const k of [
      'category',
      'greetingMessage',
      'branchId',
      'doctorId',
      'slotsEnabled',
      'bookingEnabled',
      'doctorsSyncEnabled',
      'validateHookEnabled',
      'customApiTimeoutMs',
      'appointmentScope',
    ] as const) {
      if (f[k] !== undefined) (set as Record<string, unknown>)[k] = f[k];
    }
    if (f.name !== undefined) set.name = f.name.trim();

    const scopeAfter = f.appointmentScope ?? current.appointmentScope;
    checkScope(
      scopeAfter,
      clear.includes('branchId') ? undefined : (f.branchId ?? current.branchId),
      clear.includes('doctorId') ? undefined : (f.doctorId ?? current.doctorId),
    );
    if (f.customApiBaseUrl !== undefined) set.customApiBaseUrl = this.d.customApi.checkBaseUrl(f.customApiBaseUrl);
    if (f.customApiSecret) set.customApiSecret = this.d.secrets.seal(f.customApiSecret, secretBinding(scope, id));
    let numberId = current.phoneNumberId;
    if (f.phoneNumber !== undefined || f.phoneNumberId !== undefined) {
      const number = await this.ownedNumber(scope, f);
      set.phoneNumber = number.phoneNumber;
      set.phoneNumberId = numberId = number.id;
    }
    if (numberId !== current.phoneNumberId || scopeAfter !== current.appointmentScope) {
      checkOneScopePerNumber(await this.d.agents.onNumber(scope, numberId), id, scopeAfter);
    }
    if (f.companyId !== undefined) set.companyId = await this.company(scope, f.companyId);
    if (f.selectedKnowledgebases !== undefined)
      set.selectedKnowledgebases = await this.documents(scope, f.selectedKnowledgebases);
    const regenerate = current.scriptStatus !== 'none' && scriptInputChanged(current, set, clear);
    const generation = regenerate ? randomUUID() : undefined;
    if (generation) Object.assign(set, newGeneration(generation));
    const updated = await this.d.agents.update(scope, id, set, [...clear, ...(generation ? ['scriptError'] : [])]);
    if (!updated) throw notFound('agent');
    if (generation) await this.d.jobs.request(scope, id, generation, this.now());
    return updated;
  }

  /**
   * A company changed (`fields` set or removed) or deleted: the scripts written from it are
   * written again when one of their company fields changed; a deleted company leaves its agents.
   */
  async companyChanged(scope: TenantScope, companyId: string, change: readonly string[] | 'deleted'): Promise<number> {
    if (change !== 'deleted' && !change.some((f) => SCRIPT_COMPANY_FIELDS.has(f))) return 0;
    const agents = await this.d.agents.usingCompany(scope, companyId);
    return this.rewriteScripts(scope, agents, (agent, set) =>
      this.d.agents.update(scope, agent.id, set, change === 'deleted' ? ['companyId'] : [], { companyId }),
    );
  }

  /**
   * A document the tenant deleted leaves every agent that linked it; an agent with a script gets
   * a new one without it (its last ready script answers meanwhile).
   */
  async documentDeleted(scope: TenantScope, fileId: string): Promise<number> {
    const agents = await this.d.agents.usingDocument(scope, fileId);
    return this.rewriteScripts(scope, agents, (agent, set) => this.d.agents.dropDocument(scope, agent.id, fileId, set));
  }

  /**
   * Writes each agent's change (`write`, given the fields to set), with a new generation when the
   * agent has a script, then asks for that script. The number of agents.
   */
  private async rewriteScripts(
    scope: TenantScope,
    agents: readonly Agent[],
    write: (agent: Agent, set: StoredFields) => Promise<Agent | null>,
  ): Promise<number> {
    for (const agent of agents) {
      const generation = agent.scriptStatus !== 'none' ? randomUUID() : undefined;
      const updated = await write(agent, { updatedAt: this.now(), ...(generation && newGeneration(generation)) });
      if (updated && generation) await this.d.jobs.request(scope, agent.id, generation, this.now());
    }
    return agents.length;
  }

  /** The spec's state table: see `nextStatus`; activation also needs the number still owned. */
  async activate(scope: TenantScope, id: string, activate: boolean): Promise<Agent> {
    const agent = await this.mustGet(scope, id);
    if (activate) {
      const owned = await this.d.numbers.find(scope, { id: agent.phoneNumberId });
      if (!owned) throw agentsReasons.error('phone_not_owned', `${agent.phoneNumber} is not a number the tenant owns`);
    }
    const status = nextStatus(agent, activate);
    // Activation holds only while the script is still ready (a generation may have started since).
    const now = this.now();
    const set: StoredFields = { status, updatedAt: now, ...(activate && { activatedAt: now }) };
    const updated = await this.d.agents.update(scope, id, set, [], activate ? { scriptStatus: 'ready' } : {});
    if (!updated) {
      if (activate) return this.activate(scope, id, activate); // raced a change: judge again
      throw notFound('agent');
    }
    return updated;
  }

  /** Marks the script `generating` and leaves a request for the worker; answers at once. */
  async generateScript(scope: TenantScope, id: string): Promise<Agent> {
    await this.mustGet(scope, id);
    const generation = randomUUID();
    const updated = await this.d.agents.update(scope, id, { ...newGeneration(generation), updatedAt: this.now() }, [
      'scriptError',
    ]);
    if (!updated) throw notFound('agent');
    await this.d.jobs.request(scope, id, generation, this.now());
    return updated;
  }

  /** Writes the scripts requested and not held by another worker; true when it did any. */
  async runScriptJobs(limit = 10): Promise<boolean> {
    const jobs = await this.d.jobs.claim(this.now(), this.d.claimMs, limit);
    for (const job of jobs) await this.writeScript(job);
    return jobs.length > 0;
  }

  private async writeScript(job: ScriptJob): Promise<void> {
    const { scope, agentId, generation } = job;
    const agent = await this.d.agents.get(scope, agentId);
    if (!agent || agent.scriptGeneration !== generation) return this.d.jobs.done(job); // deleted, or asked again since
    let outcome: StoredFields;
    let unset: string[] = [];
    try {
      const company = agent.companyId ? await this.d.companies.get(scope, agent.companyId) : null;
      const documents = await Promise.all(
        agent.selectedKnowledgebases.map(async (k) => ({
          fileId: k.fileId,
          title: k.title,
          text: (await this.d.knowledge.text(scope, k.fileId, SCRIPT_TEXT_CHARS)) ?? '',
        })),
      );
      const input = {
        agentName: agent.name,
        ...(agent.category !== undefined && { category: agent.category }),
        ...(agent.greetingMessage !== undefined && { greetingMessage: agent.greetingMessage }),
        appointmentScope: agent.appointmentScope,
        ...(company && { company }),
        documents,
        doctors: agent.doctors ?? [],
        booking: { slotsEnabled: agent.slotsEnabled ?? false, bookingEnabled: agent.bookingEnabled ?? false },
      };
      const text = await this.d.generator.generate(input);
      const sources: ScriptSource[] = [
        ...(company ? [{ kind: 'company' as const, id: company.id, title: company.name }] : []),
        ...(agent.greetingMessage ? [{ kind: 'greeting' as const, id: agent.id, title: 'greetingMessage' }] : []),
        ...agent.selectedKnowledgebases.map((k) => ({
          kind: 'knowledge_document' as const,
          id: k.fileId,
          title: k.title,
        })),
      ];
      outcome = {
        scriptStatus: 'ready',
        script: {
          text,
          opening: openingLine(input),
          sources,
          generator: this.d.generator.name,
          generatedAt: this.now(),
        },
      };
      unset = ['scriptError'];
    } catch (err) {
      this.d.log.warn({ err, agentId }, 'script generation failed');
      outcome = {
        scriptStatus: 'error',
        scriptError: err instanceof Error ? err.message.slice(0, 500) : 'script generation failed',
      };
    }
    // Only the generation still asked for may settle the status.
    const write = () =>
      this.d.agents.update(scope, agentId, { ...outcome, updatedAt: this.now() }, unset, {
        scriptGeneration: generation,
      });
    // A ready script is announced (agent.script_ready webhooks), if it is the one stored.
    const script = outcome.scriptStatus === 'ready' ? outcome.script : undefined;
    if (script)
      await this.d.events.scriptReady(
        scope,
        agent.id,
        generation,
        script.generatedAt,
        write,
        this.d.agents.scriptStored(scope, agentId, generation, script.generatedAt),
      );
    else await write();
    await this.d.jobs.done(job);
  }

  /**
   * The key rotation's pass (docs/operations.md): every custom-API secret not sealed by the current
   * AGENT_SECRETS_KEY is sealed again by it. Idempotent, and safe beside a tenant's own change (a
   * secret replaced meanwhile is left as it is). `unreadable`: sealed by no key of the ring.
   */
  async resealSecrets(): Promise<{ moved: number; unreadable: number }> {
    let moved = 0;
    let unreadable = 0;
    for await (const page of this.d.agents.sealedSecrets()) {
      for (const { scope, id, sealed } of page) {
        if (this.d.secrets.isCurrent(sealed)) continue;
        let next: string;
        try {
          next = this.d.secrets.reseal(sealed, secretBinding(scope, id));
        } catch {
          unreadable++;
          continue;
        }
        if (await this.d.agents.replaceSecret(scope, id, sealed, next)) moved++;
      }
    }
    return { moved, unreadable };
  }

  async syncDoctors(scope: TenantScope, id: string): Promise<{ doctors: Doctor[]; doctorsLastSyncedAt: Date }> {
    const { agent, target } = await this.withTarget(scope, id);
    const doctors = await this.d.customApi.doctors(target, agent.branchId);
    const doctorsLastSyncedAt = this.now();
    await this.d.agents.update(scope, id, { doctors, doctorsLastSyncedAt, updatedAt: doctorsLastSyncedAt });
    return { doctors, doctorsLastSyncedAt };
  }

  async crmLookup(
    scope: TenantScope,
    id: string,
    phone: string,
  ): Promise<{ found: boolean; record?: Record<string, unknown> }> {
    if (!phone.trim()) throw validationError('phone is required', [{ path: 'phone', message: 'required' }]);
    const { target } = await this.withTarget(scope, id);
    return this.d.customApi.crmLookup(target, phone.trim());
  }

  /** The agent and where to call its custom API, from one read. */
  private async withTarget(scope: TenantScope, id: string): Promise<{ agent: Agent; target: CustomApiTarget }> {
    const found = await this.d.agents.getWithSealedSecret(scope, id);
    if (!found) throw notFound('agent');
    const target = customApiTarget(this.d.secrets, scope, found.agent, found.sealedSecret);
    if (!target) throw agentsReasons.error('custom_api_not_configured', 'the agent has no customApiBaseUrl');
    return { agent: found.agent, target };
  }

  private async mustGet(scope: TenantScope, id: string): Promise<Agent> {
    const agent = await this.d.agents.get(scope, id);
    if (!agent) throw notFound('agent');
    return agent;
  }

  private async ownedNumber(
    scope: TenantScope,
    f: Pick<AgentFields, 'phoneNumber' | 'phoneNumberId'>,
  ): Promise<{ id: string; phoneNumber: string }> {
    const number = await this.d.numbers.find(scope, {
      ...(f.phoneNumberId !== undefined && { id: f.phoneNumberId }),
      ...(f.phoneNumber !== undefined && { phoneNumber: f.phoneNumber }),
    });
    if (!number || (f.phoneNumber !== undefined && number.phoneNumber !== f.phoneNumber)) {
      throw agentsReasons.error(
        'phone_not_owned',
        `${f.phoneNumber ?? f.phoneNumberId} is not a number the tenant owns`,
      );
    }
    return number;
  }

  private async company(scope: TenantScope, id: string): Promise<string> {
    const company = await this.d.companies.get(scope, id);
    if (!company) throw agentsReasons.error('company_not_found', 'companyId is unknown');
    return company.id;
  }

  /** The documents by id, deduplicated, in order; any unknown or foreign one is refused by id. */
  private async documents(scope: TenantScope, fileIds: readonly string[]): Promise<KnowledgeRef[]> {
    const unique = [...new Set(fileIds)];
    if (unique.length > this.d.maxKnowledge) {
      throw validationError(`at most ${this.d.maxKnowledge} knowledge documents`, [
        { path: 'selectedKnowledgebases', message: `at most ${this.d.maxKnowledge}` },
      ]);
    }
    if (unique.length === 0) return [];
    const { documents, missing } = await this.d.knowledge.resolve(scope, unique);
    if (missing.length > 0) {
      throw agentsReasons.error('knowledge_document_not_found', `unknown knowledge documents: ${missing.join(', ')}`);
    }
    return documents;
  }
}

/** The fields that ask for a new script: `generating`, under a generation only whose result may settle it. */
const newGeneration = (generation: string) => ({ scriptStatus: 'generating' as const, scriptGeneration: generation });

/** The company's fields a script is written from (`ScriptInput.company`). */
const SCRIPT_COMPANY_FIELDS = new Set(['name', 'description', 'industry', 'website', 'timezone', 'businessHours']);

/** What a script is written from (see `writeScript`): a change to any of these makes it stale. */
const SCRIPT_INPUTS = [
  'name',
  'category',
  'greetingMessage',
  'companyId',
  'selectedKnowledgebases',
  'appointmentScope',
  'branchId',
  'doctorId',
  'slotsEnabled',
  'bookingEnabled',
] as const;

function scriptInputChanged(current: Agent, set: StoredFields, clear: readonly ClearableField[]): boolean {
  return SCRIPT_INPUTS.some(
    (k) =>
      (k in set && JSON.stringify(set[k]) !== JSON.stringify(current[k])) || (clear as readonly string[]).includes(k),
  );
}
