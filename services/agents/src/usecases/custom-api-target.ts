import type { SecretBox } from '@voiceapi/kit/crypto';
import type { TenantScope } from '@voiceapi/kit/grpc';
import type { CustomApiTarget } from '../custom-api/custom-api';
import type { Agent } from '../domain/agent';

/** A sealed secret opens only on the agent (and tenant) it was sealed for. */
export const secretBinding = (scope: TenantScope, agentId: string): string => `${scope.tenantId}:${agentId}`;

/**
 * Where and how to call an agent's custom API, its secret opened here and only here; undefined
 * when the agent has no base URL.
 */
export function customApiTarget(
  secrets: SecretBox,
  scope: TenantScope,
  agent: Agent,
  sealedSecret: string | undefined,
): CustomApiTarget | undefined {
  if (!agent.customApiBaseUrl) return undefined;
  const secret = sealedSecret && secrets.open(sealedSecret, secretBinding(scope, agent.id));
  return { baseUrl: agent.customApiBaseUrl, timeoutMs: agent.customApiTimeoutMs, ...(secret && { secret }) };
}
