import { extendZodWithOpenApi } from '@asteasolutions/zod-to-openapi';
import { z } from 'zod';

// One zod instance with `.openapi()`: the schemas that validate requests also document them.
extendZodWithOpenApi(z);

export { z };

/** C0 controls but tab and newlines, and DEL: never meaningful in a name or a text field. */
const CONTROL = /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/;

/** Text a person typed: control characters (NUL included) are refused, not stored. */
export const text = (max: number) => z.string().max(max).refine((s) => !CONTROL.test(s), 'must not contain control characters');

/** A one-line name: trimmed, 1–max characters, no control characters. */
export const name = (max: number) =>
  z
    .string()
    .trim()
    .min(1)
    .max(max)
    .refine((s) => !/[\u0000-\u001f\u007f]/.test(s), 'must not contain control characters');

/**
 * A query integer written as plain decimal digits: `1e3`, `+5`, `0x10` or `5.0` are refused
 * instead of being coerced.
 */
export const queryInt = (min: number, max: number) =>
  z.preprocess((v) => (typeof v === 'string' && /^[0-9]{1,9}$/.test(v) ? Number(v) : v), z.number().int().min(min).max(max));
