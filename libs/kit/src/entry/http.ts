/** HTTP out to any URL a tenant gave us (SSRF checks, allowlist, egress proxy). */
export * from '../http/outbound';
