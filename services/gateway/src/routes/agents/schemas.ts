import { name, text, z } from '../../http/zod';

/** The HTTP shapes of inbound agents. The custom-API secret is accepted and never answered. */

const hexId = z.string().regex(/^[a-fA-F0-9]{24}$/, 'must be a 24-character hex id');
const e164 = z
  .string()
  .regex(/^\+[1-9][0-9]{6,14}$/, 'must be an E.164 number, e.g. +14155550100')
  .openapi({ example: '+14155550100' });
/** The most entries a request may list; the agents service applies its own, lower limit (20 by default). */
const MAX_SELECTED = 100;

export const AppointmentScope = z.enum(['global', 'hospital', 'doctor']);

const KnowledgeSelection = z
  .array(z.union([hexId, z.strictObject({ fileId: hexId })]))
  .max(MAX_SELECTED)
  .openapi({
    description:
      'fileIds of the tenant’s knowledge documents, as strings or `{ fileId }` objects; titles, knowledge-base ids and word counts are resolved by the service (unknown or foreign: 422 `knowledge_document_not_found`). At most 20 by default',
  });

const STATE_FIELDS = ['status', 'inboundScriptStatus'];
// Unknown fields are refused; the two state fields get their own message.
const refuseUnknown = {
  error: (issue: { code?: string; keys?: string[] }) =>
    issue.code === 'unrecognized_keys' && issue.keys?.some((k) => STATE_FIELDS.includes(k))
      ? `${issue.keys.filter((k) => STATE_FIELDS.includes(k)).join(' and ')} cannot be set: activate with POST /inbound-agents/{id}/activate, generate with POST /inbound-agents/{id}/generate-script`
      : issue.code === 'unrecognized_keys'
        ? `unknown field(s): ${issue.keys?.join(', ')}`
        : undefined,
};

const fields = {
  name: name(200),
  category: text(100),
  phoneNumber: e164.openapi({ description: 'An owned number (one of `phoneNumber` or `phoneNumberId`)' }),
  phoneNumberId: z
    .string()
    .regex(/^[A-Za-z0-9-]{1,64}$/, 'must be a number id from GET /numbers')
    .openapi({
      description: 'The id of an owned number (`GET /numbers`)',
      example: '0b7f4c8e-2a51-4f3e-9c1d-5e6f7a8b9c0d',
    }),
  greetingMessage: text(2_000),
  companyId: hexId.openapi({
    description: 'A company of the tenant (422 `company_not_found`); omitted on create: the tenant’s latest company',
  }),
  selectedKnowledgebases: KnowledgeSelection,
  appointmentScope: AppointmentScope.openapi({
    description:
      '`hospital` and `doctor` need `branchId`; `doctor` needs `doctorId`. One number has one scope (409 `phone_scope_conflict`)',
  }),
  branchId: name(100),
  doctorId: name(100),
  customApiBaseUrl: z.string().max(2_048).openapi({
    description:
      'The tenant’s own API (`https:`; private, loopback, link-local and metadata addresses, credentials in the URL and other schemes: 422 `url_not_allowed`)',
    example: 'https://api.clinic.example/v1',
  }),
  customApiSecret: z
    .string()
    .min(1)
    .max(1_024)
    // eslint-disable-next-line no-control-regex -- refuses control characters on purpose
    .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), 'must not contain control characters')
    .openapi({
      description: 'Sent to the custom API as `Authorization: Bearer <secret>`; stored encrypted, never returned',
      writeOnly: true,
    }),
  customApiTimeoutMs: z
    .number()
    .int()
    .min(1)
    .max(15_000)
    .openapi({ description: 'Milliseconds, at most 15000 (default 5000)' }),
  slotsEnabled: z.boolean(),
  bookingEnabled: z.boolean(),
  doctorsSyncEnabled: z.boolean(),
  validateHookEnabled: z.boolean(),
};

export const AgentCreate = z
  .strictObject(
    {
      ...fields,
      name: fields.name,
      category: fields.category.optional(),
      phoneNumber: fields.phoneNumber.optional(),
      phoneNumberId: fields.phoneNumberId.optional(),
      greetingMessage: fields.greetingMessage.optional(),
      companyId: fields.companyId.optional(),
      selectedKnowledgebases: fields.selectedKnowledgebases.optional(),
      appointmentScope: fields.appointmentScope.optional(),
      branchId: fields.branchId.optional(),
      doctorId: fields.doctorId.optional(),
      customApiBaseUrl: fields.customApiBaseUrl.optional(),
      customApiSecret: fields.customApiSecret.optional(),
      customApiTimeoutMs: fields.customApiTimeoutMs.optional(),
      slotsEnabled: fields.slotsEnabled.optional(),
      bookingEnabled: fields.bookingEnabled.optional(),
      doctorsSyncEnabled: fields.doctorsSyncEnabled.optional(),
      validateHookEnabled: fields.validateHookEnabled.optional(),
    },
    refuseUnknown,
  )
  .refine((b) => b.phoneNumber !== undefined || b.phoneNumberId !== undefined, {
    message: 'one of phoneNumber or phoneNumberId is required',
    path: ['phoneNumber'],
  })
  .openapi('InboundAgentCreate');

/** PATCH: any field; `null` removes `branchId`, `doctorId`, `companyId`, `customApiBaseUrl`, `customApiSecret`. */
export const AgentPatch = z
  .strictObject(
    {
      name: fields.name.optional(),
      category: fields.category.optional(),
      phoneNumber: fields.phoneNumber.optional(),
      phoneNumberId: fields.phoneNumberId.optional(),
      greetingMessage: fields.greetingMessage.optional(),
      companyId: fields.companyId.nullable().optional(),
      selectedKnowledgebases: fields.selectedKnowledgebases.optional(),
      appointmentScope: fields.appointmentScope.optional(),
      branchId: fields.branchId.nullable().optional(),
      doctorId: fields.doctorId.nullable().optional(),
      customApiBaseUrl: fields.customApiBaseUrl.nullable().optional(),
      customApiSecret: fields.customApiSecret.nullable().optional(),
      customApiTimeoutMs: fields.customApiTimeoutMs.optional(),
      slotsEnabled: fields.slotsEnabled.optional(),
      bookingEnabled: fields.bookingEnabled.optional(),
      doctorsSyncEnabled: fields.doctorsSyncEnabled.optional(),
      validateHookEnabled: fields.validateHookEnabled.optional(),
    },
    refuseUnknown,
  )
  .openapi('InboundAgentPatch');

const KnowledgeRef = z
  .object({
    fileId: z.string(),
    fileName: z.string(),
    title: z.string(),
    knowledgebaseId: z.string(),
    wordCount: z.number().int(),
  })
  .openapi('LinkedKnowledgeDocument');

const Script = z
  .object({
    text: z.string(),
    sources: z
      .array(
        z.object({ kind: z.enum(['company', 'greeting', 'knowledge_document']), id: z.string(), title: z.string() }),
      )
      .openapi({ description: 'What the script was built from' }),
    generator: z.string().openapi({ description: '`local` (deterministic) or a language-model adapter' }),
    generatedAt: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('InboundScript');

export const Agent = z
  .object({
    id: z.string(),
    _id: z.string().openapi({ description: 'The same as `id`' }),
    name: z.string(),
    category: z.string().nullable(),
    phoneNumber: z.string(),
    phoneNumberId: z.string(),
    status: z.enum(['active', 'inactive']),
    inboundScriptStatus: z.enum(['none', 'generating', 'ready', 'error']),
    greetingMessage: z.string().nullable(),
    companyId: z.string().nullable(),
    selectedKnowledgebases: z.array(KnowledgeRef),
    appointmentScope: AppointmentScope,
    branchId: z.string().nullable(),
    doctorId: z.string().nullable(),
    slotsEnabled: z.boolean(),
    bookingEnabled: z.boolean(),
    doctorsSyncEnabled: z.boolean(),
    validateHookEnabled: z.boolean(),
    doctorsLastSyncedAt: z.string().nullable().openapi({ format: 'date-time' }),
    customApiBaseUrl: z.string().nullable(),
    customApiTimeoutMs: z.number().int(),
    customApiSecretSet: z
      .boolean()
      .openapi({ description: 'Whether a secret is stored (the secret itself is never returned)' }),
    script: Script.nullable(),
    scriptError: z.string().nullable(),
    sandbox: z.boolean(),
    createdAt: z.string().openapi({ format: 'date-time' }),
    updatedAt: z.string().openapi({ format: 'date-time' }),
  })
  .openapi('InboundAgent');

export const AgentEnvelope = z.object({ agent: Agent });
export const ActivateBody = z.strictObject({ activate: z.boolean() });
export const ActivateResult = z.object({ agent: Agent, status: z.enum(['active', 'inactive']) });
export const Doctor = z
  .object({ id: z.string(), name: z.string(), specialty: z.string().nullable(), branchId: z.string().nullable() })
  .openapi('Doctor');
export const SyncResult = z.object({
  doctors: z.array(Doctor),
  doctorsLastSyncedAt: z.string().openapi({ format: 'date-time' }),
});
export const LookupBody = z.strictObject({ phone: e164 });
export const LookupResult = z.object({
  found: z.boolean(),
  record: z
    .record(z.string(), z.unknown())
    .nullable()
    .openapi({ description: 'The record as the tenant’s API answered it; null when not found' }),
});
