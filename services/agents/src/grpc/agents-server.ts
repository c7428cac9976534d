import { validationError } from '@voiceapi/kit/errors';
import { registerService, requireTenant, type ServiceRegistration, pageAsked } from '@voiceapi/kit/grpc';
import { type Logger } from '@voiceapi/kit/service';
import { voiceapi } from '@voiceapi/proto';
import type { Agent, AgentFields, AppointmentScope, ClearableField, ScriptStatus } from '../domain/agent';
import type { Agents } from '../usecases/agents';
import type { Answering } from '../usecases/answering';

const pb = voiceapi.agents.v1;

/** gRPC adapter: maps messages to use-case calls and domain objects back, nothing more. */
export function agentsService(uc: Agents, answering: Answering, log: Logger): ServiceRegistration {
  return registerService(
    'voiceapi.agents.v1.AgentsService',
    pb.AgentsServiceService,
    {
      listAgents: async (req, ctx) => {
        const res = await uc.list(requireTenant(ctx), pageAsked(req.page));
        return {
          agents: res.items.map(toProto),
          page: { page: res.page, limit: res.limit, total: res.total, hasMore: res.hasMore },
        };
      },
      createAgent: async (req, ctx) => ({ agent: toProto(await uc.create(requireTenant(ctx), fromProto(req.fields))) }),
      getAgent: async (req, ctx) => ({ agent: toProto(await uc.get(requireTenant(ctx), req.id)) }),
      updateAgent: async (req, ctx) => ({
        agent: toProto(
          await uc.update(requireTenant(ctx), req.id, fromProto(req.fields), clearedFields(req.clearFields)),
        ),
      }),
      activateAgent: async (req, ctx) => ({
        agent: toProto(await uc.activate(requireTenant(ctx), req.id, req.activate)),
      }),
      // The recorded request wakes the script workers (a change stream on script_jobs).
      generateScript: async (req, ctx) => ({ agent: toProto(await uc.generateScript(requireTenant(ctx), req.id)) }),
      syncDoctors: async (req, ctx) => {
        const res = await uc.syncDoctors(requireTenant(ctx), req.id);
        return { doctors: res.doctors, doctorsLastSyncedTime: res.doctorsLastSyncedAt };
      },
      crmLookup: async (req, ctx) => uc.crmLookup(requireTenant(ctx), req.id, req.phone),
      findAnsweringAgent: async (req, ctx) => {
        const agent = await answering.answeringAgent(requireTenant(ctx), req.phoneNumberId);
        return agent ? { agentId: agent.id, agentName: agent.name } : {};
      },
      holdConversation: async (req, ctx) => {
        const c = await answering.holdConversation(
          requireTenant(ctx),
          req.agentId,
          req.callerNumber,
          req.answerTime ?? new Date(),
        );
        return {
          turns: c.turns.map((t) => ({
            speaker: t.speaker === 'agent' ? pb.Speaker.SPEAKER_AGENT : pb.Speaker.SPEAKER_CALLER,
            text: t.text,
          })),
          summary: c.summary,
          outcome: c.outcome,
          steps: c.steps,
          appointmentId: c.appointmentId,
        };
      },
    },
    log,
  );
}

const SCOPES: Record<number, AppointmentScope | undefined> = {
  [pb.AppointmentScope.APPOINTMENT_SCOPE_GLOBAL]: 'global',
  [pb.AppointmentScope.APPOINTMENT_SCOPE_HOSPITAL]: 'hospital',
  [pb.AppointmentScope.APPOINTMENT_SCOPE_DOCTOR]: 'doctor',
};
const SCOPE_OF: Record<AppointmentScope, voiceapi.agents.v1.AppointmentScope> = {
  global: pb.AppointmentScope.APPOINTMENT_SCOPE_GLOBAL,
  hospital: pb.AppointmentScope.APPOINTMENT_SCOPE_HOSPITAL,
  doctor: pb.AppointmentScope.APPOINTMENT_SCOPE_DOCTOR,
};
const SCRIPT_STATUS_OF: Record<ScriptStatus, voiceapi.agents.v1.ScriptStatus> = {
  none: pb.ScriptStatus.SCRIPT_STATUS_NONE,
  generating: pb.ScriptStatus.SCRIPT_STATUS_GENERATING,
  ready: pb.ScriptStatus.SCRIPT_STATUS_READY,
  error: pb.ScriptStatus.SCRIPT_STATUS_ERROR,
};

const TEXT = [
  'name',
  'category',
  'phoneNumber',
  'phoneNumberId',
  'greetingMessage',
  'companyId',
  'branchId',
  'doctorId',
  'customApiBaseUrl',
  'customApiSecret',
] as const;
const FLAGS = ['slotsEnabled', 'bookingEnabled', 'doctorsSyncEnabled', 'validateHookEnabled'] as const;

/** Keeps only fields that were sent (proto3 optional presence), so an update changes nothing else. */
export function fromProto(f: voiceapi.agents.v1.AgentFields | undefined): AgentFields {
  const out: AgentFields = {};
  if (!f) return out;
  for (const k of TEXT) if (f[k] !== undefined) out[k] = f[k];
  for (const k of FLAGS) if (f[k] !== undefined) out[k] = f[k];
  if (f.customApiTimeoutMs !== undefined) out.customApiTimeoutMs = f.customApiTimeoutMs;
  if (f.selectedKnowledgebases) out.selectedKnowledgebases = f.selectedKnowledgebases.fileIds;
  if (f.appointmentScope) {
    const scope = SCOPES[f.appointmentScope];
    if (!scope)
      throw validationError('unknown appointment scope', [
        { path: 'appointmentScope', message: 'global, hospital or doctor' },
      ]);
    out.appointmentScope = scope;
  }
  return out;
}

const CLEARABLE: Record<string, ClearableField> = {
  branch_id: 'branchId',
  doctor_id: 'doctorId',
  company_id: 'companyId',
  custom_api_base_url: 'customApiBaseUrl',
  custom_api_secret: 'customApiSecret',
};

function clearedFields(names: string[]): ClearableField[] {
  const unknown = names.filter((n) => !Object.prototype.hasOwnProperty.call(CLEARABLE, n));
  if (unknown.length)
    throw validationError(
      `these fields cannot be removed: ${unknown.join(', ')}`,
      unknown.map((n) => ({ path: n, message: 'cannot be removed' })),
    );
  return [...new Set(names.map((n) => CLEARABLE[n]!))];
}

export function toProto(a: Agent): voiceapi.agents.v1.Agent {
  return {
    id: a.id,
    name: a.name,
    category: a.category ?? '',
    phoneNumber: a.phoneNumber,
    phoneNumberId: a.phoneNumberId,
    status: a.status === 'active' ? pb.AgentStatus.AGENT_STATUS_ACTIVE : pb.AgentStatus.AGENT_STATUS_INACTIVE,
    scriptStatus: SCRIPT_STATUS_OF[a.scriptStatus],
    greetingMessage: a.greetingMessage ?? '',
    companyId: a.companyId,
    selectedKnowledgebases: a.selectedKnowledgebases,
    appointmentScope: SCOPE_OF[a.appointmentScope],
    branchId: a.branchId,
    doctorId: a.doctorId,
    slotsEnabled: a.slotsEnabled ?? false,
    bookingEnabled: a.bookingEnabled ?? false,
    doctorsSyncEnabled: a.doctorsSyncEnabled ?? false,
    validateHookEnabled: a.validateHookEnabled ?? false,
    doctorsLastSyncedTime: a.doctorsLastSyncedAt,
    customApiBaseUrl: a.customApiBaseUrl,
    customApiTimeoutMs: a.customApiTimeoutMs,
    customApiSecretSet: a.customApiSecretSet,
    script: a.script && {
      text: a.script.text,
      sources: a.script.sources,
      generator: a.script.generator,
      generateTime: a.script.generatedAt,
    },
    scriptError: a.scriptError,
    sandbox: a.sandbox,
    createTime: a.createdAt,
    updateTime: a.updatedAt,
  };
}
