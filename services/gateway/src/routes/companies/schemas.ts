import { name, text, z } from '../../http/zod';

/** The HTTP shapes of company profiles: request bodies as the contract allows them, the answer. */

const isTimeZone = (tz: string): boolean => {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
};

const CREDENTIALS_FIELD = 'omniChannelSettings';

const FREE_FORM_MAX_BYTES = 8 * 1024;

const fields = {
  name: name(200),
  mobile: z
    .string()
    .trim()
    .regex(/^\+?[0-9][0-9 ()-]{2,30}$/, 'must be a phone number')
    .openapi({ example: '+14155550100' }),
  countryCode: z
    .string()
    .trim()
    .regex(/^\+?[0-9]{1,4}$/, 'must be a calling code like +1')
    .openapi({ example: '+1' }),
  countryIso: z
    .string()
    .trim()
    .regex(/^[A-Za-z]{2}$/, 'must be an ISO 3166-1 alpha-2 code')
    .transform((s) => s.toUpperCase())
    .openapi({ example: 'US' }),
  description: text(5_000),
  industry: text(200).transform((v) => v.trim()),
  website: z
    .url({ protocol: /^https?$/, error: 'must be an http(s) URL' })
    .max(2_048)
    .openapi({
      pattern: '^[Hh][Tt][Tt][Pp][Ss]?://',
      description: 'An absolute http or https URL (other schemes are refused), at most 2048 characters',
      example: 'https://clinic.example',
    }),
  businessHours: z
    .record(z.string(), z.unknown())
    .refine((value) => Buffer.byteLength(JSON.stringify(value)) <= FREE_FORM_MAX_BYTES, 'must be at most 8 KiB as JSON')
    .openapi({
      description:
        'Free-form opening hours, e.g. `{ "mon": ["09:00-17:00"] }`. At most 8 KiB (8192 bytes) as compact UTF-8 JSON; larger is refused with 400',
      'x-max-json-bytes': FREE_FORM_MAX_BYTES,
      example: { mon: ['09:00-17:00'] },
    }),
  timezone: z.string().refine(isTimeZone, 'must be an IANA time zone such as Europe/Berlin').openapi({
    description:
      'An IANA time zone name (tz database), such as `America/New_York` or `Europe/Berlin`; anything else is refused with 400',
    example: 'America/New_York',
  }),
};

// Unknown fields are refused, and the credential container gets its own clear message.
const refuseUnknown = {
  error: (issue: { code?: string; keys?: string[] }) =>
    issue.code === 'unrecognized_keys' && issue.keys?.includes(CREDENTIALS_FIELD)
      ? `${CREDENTIALS_FIELD} cannot be set through the API (dashboard only)`
      : issue.code === 'unrecognized_keys'
        ? `unknown field(s): ${issue.keys?.join(', ')}`
        : undefined,
};

// Every field optional (PATCH); create requires a name on top.
const companyFields = z.strictObject(
  {
    name: fields.name.optional(),
    mobile: fields.mobile.optional(),
    countryCode: fields.countryCode.optional(),
    countryIso: fields.countryIso.optional(),
    description: fields.description.optional(),
    industry: fields.industry.optional(),
    website: fields.website.optional(),
    businessHours: fields.businessHours.optional(),
    timezone: fields.timezone.optional(),
  },
  refuseUnknown,
);

export const CompanyCreate = companyFields.extend({ name: fields.name }).openapi('CompanyCreate');

// PATCH: `null` removes a field (every field but the name).
const companyPatchFields = z.strictObject(
  {
    name: fields.name.optional(),
    mobile: fields.mobile.nullable().optional(),
    countryCode: fields.countryCode.nullable().optional(),
    countryIso: fields.countryIso.nullable().optional(),
    description: fields.description.nullable().optional(),
    industry: fields.industry.nullable().optional(),
    website: fields.website.nullable().optional(),
    businessHours: fields.businessHours.nullable().optional(),
    timezone: fields.timezone.nullable().optional(),
  },
  refuseUnknown,
);

export const CompanyPatch = companyPatchFields
  .refine((b) => Object.keys(b).length > 0, {
    message: 'send at least one field to change',
    // Only meaningful when the body is otherwise valid (an unknown field already failed it).
    when: (payload) => payload.issues.length === 0,
  })
  .openapi('CompanyPatch', { minProperties: 1 });

export const Company = z
  .object({
    id: z.string(),
    name: z.string(),
    mobile: z.string().nullable(),
    countryCode: z.string().nullable(),
    countryIso: z.string().nullable(),
    description: z.string().nullable(),
    industry: z.string().nullable(),
    website: z.string().nullable(),
    businessHours: z.record(z.string(), z.unknown()).nullable(),
    timezone: z.string().nullable(),
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
  })
  .openapi('Company', { description: 'Company profile. Credentials (`omniChannelSettings`) are never returned.' });

export const CompanyEnvelope = z.object({ company: Company });
