import { SecretBox } from '@voiceapi/kit/crypto';
import type { Outbox } from '@voiceapi/kit/events';
import { OutboundClient } from '@voiceapi/kit/http';
import type { OpenedService } from '@voiceapi/kit/service';
import type { Config } from '../config';
import { CustomApi } from '../custom-api/custom-api';
import { agentEvents } from '../events/publish';
import { scriptGenerator } from '../script/generator';
import { Agents } from '../usecases/agents';
import { Answering } from '../usecases/answering';
import type { Clients } from './clients';
import type { Stores } from './stores';

export function buildUseCases(
  { cfg, log, lifecycle }: OpenedService<Config>,
  { agents, jobs }: Stores,
  { numbers, companies, knowledge }: Clients,
  outbox: Outbox,
) {
  const outbound = new OutboundClient({ allow: cfg.OUTBOUND_ALLOWLIST, proxy: cfg.OUTBOUND_PROXY });
  lifecycle.onStop('outbound client', () => outbound.close());
  const customApi = new CustomApi(outbound);
  // A key ring: the current key seals, earlier ones (while a rotation is under way) still open.
  const secrets = new SecretBox(
    [cfg.AGENT_SECRETS_KEY, ...cfg.AGENT_SECRETS_PREVIOUS_KEYS],
    'agents.custom-api-secret',
  );
  return {
    agents: new Agents({
      agents,
      jobs,
      numbers,
      companies,
      knowledge,
      events: agentEvents(outbox),
      customApi,
      secrets,
      generator: scriptGenerator(cfg.SCRIPT_GENERATOR),
      maxKnowledge: cfg.MAX_SELECTED_KNOWLEDGEBASES,
      claimMs: cfg.SCRIPT_CLAIM_MS,
      log,
    }),
    answering: new Answering({ agents, companies, customApi, secrets }),
    secrets,
  };
}
