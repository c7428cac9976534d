/**
 * Placeholders of omni templates: email fills `{{key}}` from a lead's templateVariables,
 * WhatsApp fills `{{1}}`, `{{2}}` from its whatsappParams.
 */

// A fresh RegExp per use: a shared /g one carries lastIndex from call to call.
const placeholder = () => /\{\{\s*([A-Za-z0-9_.-]{1,64})\s*\}\}/g;

// Values come from tenants' JSON: only own keys count, so `constructor` or `__proto__` is missing
// unless the lead gave it, never a member of Object.prototype.
const own = (values: object, key: string): boolean => Object.prototype.hasOwnProperty.call(values, key);

/** Unique placeholder names in order of first appearance. */
export function placeholdersOf(...texts: (string | undefined)[]): string[] {
  const names = new Set<string>();
  for (const text of texts) {
    if (text === undefined) continue;
    for (const match of text.matchAll(placeholder())) names.add(match[1]!);
  }
  return [...names];
}

/** Reports every missing value instead of rendering; values are inserted verbatim, never expanded. */
export function render(
  text: string,
  values: Readonly<Record<string, string>>,
): { ok: true; text: string } | { ok: false; missing: string[] } {
  const missing = placeholdersOf(text).filter((name) => !own(values, name) || typeof values[name] !== 'string');
  if (missing.length) return { ok: false, missing };
  // One pass with a function: a value is never scanned again, and `$&` in it stays as written.
  return { ok: true, text: text.replace(placeholder(), (_match, name: string) => values[name]!) };
}

/** A list becomes {"1": list[0], ...}; an object is returned as is. */
export function whatsappValues(
  params: readonly string[] | Readonly<Record<string, string>> | undefined,
): Record<string, string> {
  if (params === undefined) return {};
  if (isList(params)) return Object.fromEntries(params.map((value, i) => [String(i + 1), value]));
  return { ...params };
}

// Array.isArray does not narrow a readonly array out of a union.
const isList = (params: readonly string[] | Readonly<Record<string, string>>): params is readonly string[] =>
  Array.isArray(params);
