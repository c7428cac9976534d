import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

// One zod instance with `.openapi()`: the schemas that validate requests also document them.
extendZodWithOpenApi(z);

export { z };

/** C0 controls but tab and newlines, and DEL: never meaningful in a name or a text field. */
// eslint-disable-next-line no-control-regex -- refuses control characters on purpose
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

// The same rules as JSON Schema patterns (ECMA-262, written with escapes so the document stays
// plain text), so the OpenAPI document says what the server enforces.
const TEXT_PATTERN = '^[^\\u0000-\\u0008\\u000b\\u000c\\u000e-\\u001f\\u007f]*$';
// What JavaScript's trim() removes, spelled out: `\s` differs between regex engines (Python's
// includes U+001C–U+001F), and fuzzers generate from this pattern in Python.
const SPACE = '\\t\\n\\u000b\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000\\ufeff';
const NOT_CONTROL = '[^\\u0000-\\u001f\\u007f]';
// Exactly what name() accepts, length aside: white space around a core that has a character
// which is neither space nor control, and no control character inside it.
const NAME_PATTERN = `^[${SPACE}]*${NOT_CONTROL}*[^${SPACE}\\u0000-\\u001f\\u007f]${NOT_CONTROL}*[${SPACE}]*$`;

/** Text a person typed: control characters (NUL included) are refused, not stored. */
export const text = (max: number) =>
  z
    .string()
    .max(max)
    .refine((s) => !CONTROL.test(s), 'must not contain control characters')
    .openapi({
      pattern: TEXT_PATTERN,
      description: `At most ${max} characters; control characters other than tab and line breaks are refused`,
    });

/** A one-line name: trimmed, 1–max characters, no control characters. */
export const name = (max: number) =>
  z
    .string()
    // The published maxLength bounds the value as sent, white space included (schemathesis
    // found a padded name over the bound accepted); after trimming it must still fit.
    .max(max)
    .trim()
    .min(1)
    // eslint-disable-next-line no-control-regex -- refuses control characters on purpose
    .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), 'must not contain control characters')
    .openapi({
      pattern: NAME_PATTERN,
      description: `At most ${max} characters as sent; leading and trailing white space is trimmed and at least 1 character must remain. Control characters (tab and line breaks included) are refused`,
    });

/**
 * A query integer written as plain decimal digits: `1e3`, `+5`, `0x10` or `5.0` are refused
 * instead of being coerced.
 */
export const queryInt = (min: number, max: number) =>
  z.preprocess(
    (v) => (typeof v === 'string' && /^[0-9]{1,9}$/.test(v) ? Number(v) : v),
    z.number().int().min(min).max(max),
  );

/** How a query integer's description says it is written. */
export const PLAIN_INTEGER = 'plain decimal digits only (`1e3`, `+5`, `0x10`, `5.0` are refused)';

/**
 * A response enum the reference says may grow: `make contracts-check` then lets a release add a
 * value (any other change to an enum tenants read is breaking). The description says so, for the
 * tenants who must treat a value they do not know as the nearest one they do.
 */
export const mayGrow = <T extends z.ZodType>(schema: T, description: string, unknownMeans: string): T =>
  schema.openapi({
    'x-enum-may-grow': true,
    description: `${description}. New values may be added in later releases: treat one you do not know as ${unknownMeans}`,
  });
