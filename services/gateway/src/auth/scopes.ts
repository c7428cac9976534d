/** Every scope a key can hold, and which are granted when approval names none. */
export const SCOPES = [
  'calls:read',
  'credits:read',
  'webhooks:write',
  'leads:read',
  'leads:write',
  'inbound:read',
  'inbound:write',
  'companies:read',
  'companies:write',
  'knowledge:read',
  'knowledge:write',
  'analytics:read',
  'recordings:read',
] as const;

export type Scope = (typeof SCOPES)[number];

export const DEFAULT_SCOPES: readonly Scope[] = [
  'calls:read',
  'credits:read',
  'webhooks:write',
  'leads:read',
  'leads:write',
  'inbound:read',
  'inbound:write',
];

export const isScope = (s: string): s is Scope => (SCOPES as readonly string[]).includes(s);
