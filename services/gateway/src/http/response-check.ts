import { ErrorBody } from './errors';
import { isBinary, type RouteResult } from './result';
import { contentTypeMatches, type AnyRoute, type AnyZod } from './route';

/**
 * Test-time check that a handler's answer is what the route documents (RESPONSE_SCHEMA_CHECK):
 * a documented status, the documented kind (JSON or binary), a JSON body matching the status's
 * schema with no undocumented fields, error bodies of the one error shape. Returns the problem,
 * or undefined. Off in production: it parses every answer.
 */
export function responseProblem(route: AnyRoute, result: RouteResult): string | undefined {
  const spec = route.responses[result.status];
  if (isBinary(result)) {
    if (!spec?.binary) return `status ${result.status} is not documented as a binary answer`;
    if (!contentTypeMatches(result.contentType, spec.binary))
      return `content type ${result.contentType} is not documented (${spec.binary.join(', ')})`;
    return undefined;
  }
  if (result.status >= 400 && !spec) return schemaProblem(ErrorBody, result.body);
  if (!spec) return `status ${result.status} is not documented`;
  if (spec.binary && !spec.schema) return `status ${result.status} is documented as binary, the handler answered JSON`;
  if (!spec.schema)
    return result.body === undefined ? undefined : `status ${result.status} is documented without a body`;
  return schemaProblem(spec.schema, result.body);
}

function schemaProblem(schema: AnyZod, body: unknown): string | undefined {
  const parsed = schema.safeParse(body);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return `body does not match the schema at ${['body', ...(issue?.path.map(String) ?? [])].join('.')}: ${issue?.message}`;
  }
  const extra = undocumentedField(body, parsed.data, 'body');
  return extra && `undocumented field ${extra}`;
}

/** zod drops fields a schema does not name: a field in the answer but not in the parse is undocumented. */
function undocumentedField(raw: unknown, parsed: unknown, path: string): string | undefined {
  if (Array.isArray(raw) && Array.isArray(parsed)) {
    for (let i = 0; i < raw.length; i++) {
      const found = undocumentedField(raw[i], parsed[i], `${path}.${i}`);
      if (found) return found;
    }
    return undefined;
  }
  if (isPlainObject(raw) && isPlainObject(parsed)) {
    for (const [key, value] of Object.entries(raw)) {
      if (value === undefined) continue; // not serialised
      if (!Object.hasOwn(parsed, key)) return `${path}.${key}`;
      const found = undocumentedField(value, parsed[key], `${path}.${key}`);
      if (found) return found;
    }
  }
  return undefined;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Date);
