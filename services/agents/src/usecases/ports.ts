import type { TenantScope } from '@voiceapi/kit';
import type { KnowledgeRef } from '../domain/agent';
import type { ScriptInput } from '../script/generator';

/** Telephony, as agents need it: a number the tenant owns, by id or number (null when not owned). */
export interface OwnedNumbers {
  find(scope: TenantScope, by: { id?: string; phoneNumber?: string }): Promise<{ id: string; phoneNumber: string } | null>;
}

/** Companies: one company of the tenant (null when unknown or foreign), or its latest. */
export interface Companies {
  get(scope: TenantScope, id: string): Promise<ScriptInput['company'] | null>;
  latest(scope: TenantScope): Promise<ScriptInput['company'] | null>;
}

/** Knowledge: documents resolved by id, and their text. */
export interface Knowledge {
  resolve(scope: TenantScope, fileIds: readonly string[]): Promise<{ documents: KnowledgeRef[]; missing: string[] }>;
  text(scope: TenantScope, fileId: string, maxChars: number): Promise<string | null>;
}

/**
 * What agents announce (the `agents.v1` stream, through the outbox): an event is stored held
 * before the write it announces, then released after it, or discarded when the write did not
 * happen, so no reader hears of a script that is not there.
 */
export interface AgentEvents {
  /** `scope` is the caller who asked for the script: a sandbox key's request announces `sandbox: true`. */
  scriptReady(scope: TenantScope, agentId: string, generation: string, generatedAt: Date): Promise<string[]>;
  release(ids: readonly string[]): Promise<void>;
  discard(ids: readonly string[]): Promise<void>;
}
