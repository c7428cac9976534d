import { voiceapi } from '@voiceapi/proto';
import type { z } from '../../http/zod';
import type { Agent, AgentCreate, AgentPatch, Doctor } from './schemas';

const pb = voiceapi.agents.v1;
const SCOPE_JSON: Record<number, 'global' | 'hospital' | 'doctor'> = {
  [pb.AppointmentScope.APPOINTMENT_SCOPE_GLOBAL]: 'global',
  [pb.AppointmentScope.APPOINTMENT_SCOPE_HOSPITAL]: 'hospital',
  [pb.AppointmentScope.APPOINTMENT_SCOPE_DOCTOR]: 'doctor',
};
const SCOPE_PROTO = {
  global: pb.AppointmentScope.APPOINTMENT_SCOPE_GLOBAL,
  hospital: pb.AppointmentScope.APPOINTMENT_SCOPE_HOSPITAL,
  doctor: pb.AppointmentScope.APPOINTMENT_SCOPE_DOCTOR,
} as const;
const SCRIPT_JSON: Record<number, 'none' | 'generating' | 'ready' | 'error'> = {
  [pb.ScriptStatus.SCRIPT_STATUS_NONE]: 'none',
  [pb.ScriptStatus.SCRIPT_STATUS_GENERATING]: 'generating',
  [pb.ScriptStatus.SCRIPT_STATUS_READY]: 'ready',
  [pb.ScriptStatus.SCRIPT_STATUS_ERROR]: 'error',
};

const iso = (d: Date | undefined) => (d ? d.toISOString() : null);

/** The agents service's message → the JSON answer (`id` and `_id` alike; never a secret). */
export function agentJson(a: voiceapi.agents.v1.Agent | undefined): z.infer<typeof Agent> {
  if (!a) throw new Error('agents service answered without an agent');
  return {
    id: a.id,
    _id: a.id,
    name: a.name,
    category: a.category || null,
    phoneNumber: a.phoneNumber,
    phoneNumberId: a.phoneNumberId,
    status: a.status === pb.AgentStatus.AGENT_STATUS_ACTIVE ? 'active' : 'inactive',
    inboundScriptStatus: SCRIPT_JSON[a.scriptStatus] ?? 'none',
    greetingMessage: a.greetingMessage || null,
    companyId: a.companyId ?? null,
    selectedKnowledgebases: a.selectedKnowledgebases.map((k) => ({
      fileId: k.fileId,
      fileName: k.fileName,
      title: k.title,
      knowledgebaseId: k.knowledgebaseId,
      wordCount: k.wordCount,
    })),
    appointmentScope: SCOPE_JSON[a.appointmentScope] ?? 'global',
    branchId: a.branchId ?? null,
    doctorId: a.doctorId ?? null,
    slotsEnabled: a.slotsEnabled,
    bookingEnabled: a.bookingEnabled,
    doctorsSyncEnabled: a.doctorsSyncEnabled,
    validateHookEnabled: a.validateHookEnabled,
    doctorsLastSyncedAt: iso(a.doctorsLastSyncedTime),
    customApiBaseUrl: a.customApiBaseUrl ?? null,
    customApiTimeoutMs: a.customApiTimeoutMs,
    customApiSecretSet: a.customApiSecretSet,
    script: a.script
      ? {
          text: a.script.text,
          sources: a.script.sources.map((s) => ({
            kind: s.kind as 'company' | 'greeting' | 'knowledge_document',
            id: s.id,
            title: s.title,
          })),
          generator: a.script.generator,
          generatedAt: iso(a.script.generateTime) ?? new Date(0).toISOString(),
        }
      : null,
    scriptError: a.scriptError ?? null,
    sandbox: a.sandbox,
    createdAt: iso(a.createTime) ?? new Date(0).toISOString(),
    updatedAt: iso(a.updateTime) ?? new Date(0).toISOString(),
  };
}

export function doctorJson(d: voiceapi.agents.v1.Doctor): z.infer<typeof Doctor> {
  return { id: d.id, name: d.name, specialty: d.specialty ?? null, branchId: d.branchId ?? null };
}

type Body = z.infer<typeof AgentCreate> | z.infer<typeof AgentPatch>;

const PROTO_NAME: Record<string, string> = {
  branchId: 'branch_id',
  doctorId: 'doctor_id',
  companyId: 'company_id',
  customApiBaseUrl: 'custom_api_base_url',
  customApiSecret: 'custom_api_secret',
};

/** A create or PATCH body → the service's fields, and (PATCH) the fields sent as `null` to remove. */
export function agentFields(body: Body): { fields: voiceapi.agents.v1.AgentFields; clearFields: string[] } {
  const fields: Record<string, unknown> = {};
  const clearFields: string[] = [];
  for (const [key, value] of Object.entries(body)) {
    if (value === undefined) continue;
    if (value === null) clearFields.push(PROTO_NAME[key]!);
    else if (key === 'selectedKnowledgebases')
      fields[key] = {
        fileIds: (value as (string | { fileId: string })[]).map((v) => (typeof v === 'string' ? v : v.fileId)),
      };
    else if (key === 'appointmentScope') fields[key] = SCOPE_PROTO[value as keyof typeof SCOPE_PROTO];
    else fields[key] = value;
  }
  return { fields: { appointmentScope: pb.AppointmentScope.APPOINTMENT_SCOPE_UNSPECIFIED, ...fields }, clearFields };
}
