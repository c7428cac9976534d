import type { ReadBack } from '@voiceapi/kit/events';
import type { TenantScope } from '@voiceapi/kit/grpc';
import type { KnowledgeRef } from '../domain/agent';
import type { ScriptInput } from '../script/generator';

/** Telephony, as agents need it: a number the tenant owns, by id or number (null when not owned). */
export interface OwnedNumbers {
  find(
    scope: TenantScope,
    by: { id?: string; phoneNumber?: string },
  ): Promise<{ id: string; phoneNumber: string } | null>;
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
 * What agents announce (the `agents.v1` stream): no reader hears of a script that is not there.
 */
export interface AgentEvents {
  /**
   * Runs `write` (the script stored for this generation) and announces it (ScriptReady) only if it
   * happened: `write` answers null when the generation was no longer the one asked for; `readBack`
   * (from the store) tells, should it fail part-way. `scope` is the caller who asked for the
   * script: a sandbox key's request announces `sandbox: true`.
   */
  scriptReady<R>(
    scope: TenantScope,
    agentId: string,
    generation: string,
    generatedAt: Date,
    write: () => Promise<R>,
    readBack: ReadBack,
  ): Promise<R>;
}
