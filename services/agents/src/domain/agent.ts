import { validationError } from '@voiceapi/kit/errors';
import { agentsReasons } from '../reasons';

export type AgentStatus = 'inactive' | 'active';
export type ScriptStatus = 'none' | 'generating' | 'ready' | 'error';
export type AppointmentScope = 'global' | 'hospital' | 'doctor';

export interface KnowledgeRef {
  fileId: string;
  fileName: string;
  title: string;
  knowledgebaseId: string;
  wordCount: number;
}

export interface ScriptSource {
  kind: 'company' | 'greeting' | 'knowledge_document';
  id: string;
  title: string;
}

export interface Script {
  text: string;
  /** The line the agent answers with (its greeting when the script was written). */
  opening?: string;
  sources: ScriptSource[];
  generator: string;
  generatedAt: Date;
}

export interface Doctor {
  id: string;
  name: string;
  specialty?: string;
  branchId?: string;
}

/** An inbound agent (the domain object). The custom-API secret is not part of it: only whether one is set. */
export interface Agent {
  id: string;
  name: string;
  category?: string;
  phoneNumber: string;
  phoneNumberId: string;
  status: AgentStatus;
  /** When it was last activated: of two active agents on one number, the later answers. */
  activatedAt?: Date;
  scriptStatus: ScriptStatus;
  greetingMessage?: string;
  companyId?: string;
  selectedKnowledgebases: KnowledgeRef[];
  appointmentScope: AppointmentScope;
  branchId?: string;
  doctorId?: string;
  slotsEnabled?: boolean;
  bookingEnabled?: boolean;
  doctorsSyncEnabled?: boolean;
  validateHookEnabled?: boolean;
  doctors?: Doctor[];
  doctorsLastSyncedAt?: Date;
  customApiBaseUrl?: string;
  customApiSecretSet: boolean;
  customApiTimeoutMs: number;
  script?: Script;
  scriptError?: string;
  /** The generation the current `generating` belongs to; a stale worker's result is dropped. */
  scriptGeneration?: string;
  sandbox: boolean;
  createdAt: Date;
  updatedAt: Date;
}

/** What a tenant may write (create, or update: absent means unchanged). */
export interface AgentFields {
  name?: string;
  category?: string;
  phoneNumber?: string;
  phoneNumberId?: string;
  greetingMessage?: string;
  companyId?: string;
  selectedKnowledgebases?: string[];
  appointmentScope?: AppointmentScope;
  branchId?: string;
  doctorId?: string;
  customApiBaseUrl?: string;
  customApiSecret?: string;
  customApiTimeoutMs?: number;
  slotsEnabled?: boolean;
  bookingEnabled?: boolean;
  doctorsSyncEnabled?: boolean;
  validateHookEnabled?: boolean;
}

export type ClearableField = 'branchId' | 'doctorId' | 'companyId' | 'customApiBaseUrl' | 'customApiSecret';

export const DEFAULT_CUSTOM_API_TIMEOUT_MS = 5_000;
export const MAX_CUSTOM_API_TIMEOUT_MS = 15_000;

/** `hospital` and `doctor` need a branch; `doctor` a doctor too. */
export function checkScope(scope: AppointmentScope, branchId: string | undefined, doctorId: string | undefined): void {
  const problems = [
    ...(scope !== 'global' && !branchId
      ? [{ path: 'branchId', message: `required for appointmentScope ${scope}` }]
      : []),
    ...(scope === 'doctor' && !doctorId ? [{ path: 'doctorId', message: 'required for appointmentScope doctor' }] : []),
  ];
  if (problems.length) throw validationError('the appointment scope needs more fields', problems);
}

export function checkTimeout(ms: number | undefined): void {
  if (ms !== undefined && (!Number.isInteger(ms) || ms < 1 || ms > MAX_CUSTOM_API_TIMEOUT_MS)) {
    throw validationError('customApiTimeoutMs is out of range', [
      { path: 'customApiTimeoutMs', message: `a whole number of milliseconds from 1 to ${MAX_CUSTOM_API_TIMEOUT_MS}` },
    ]);
  }
}

/** One number has one appointment scope: every other agent on it must have the same. */
export function checkOneScopePerNumber(
  others: readonly Pick<Agent, 'id' | 'appointmentScope'>[],
  self: string | undefined,
  scope: AppointmentScope,
): void {
  const clash = others.find((a) => a.id !== self && a.appointmentScope !== scope);
  if (clash)
    throw agentsReasons.error(
      'phone_scope_conflict',
      `the number already has an agent with appointment scope ${clash.appointmentScope}; one number has one scope`,
    );
}

/**
 * The activation rules of the spec's state table: activation needs an owned number (checked by
 * the caller, which asks telephony) and a ready script; deactivation works from any state.
 */
export function nextStatus(agent: Pick<Agent, 'scriptStatus'>, activate: boolean): AgentStatus {
  if (!activate) return 'inactive';
  if (agent.scriptStatus !== 'ready') {
    throw agentsReasons.error(
      'script_not_ready',
      agent.scriptStatus === 'none'
        ? 'the agent has no script yet: generate one first'
        : `the script is ${agent.scriptStatus}`,
    );
  }
  return 'active';
}
