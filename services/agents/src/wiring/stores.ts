import type { OpenedService } from '@voiceapi/kit/service';
import type { Config } from '../config';
import { AgentStore } from '../store/agent-store';
import { ScriptJobStore } from '../store/script-job-store';

export type Stores = ReturnType<typeof openStores>;

export function openStores({ cfg, conn, log, lifecycle }: OpenedService<Config>) {
  const agents = new AgentStore(conn, { cacheTtlMs: cfg.AGENT_CACHE_TTL_MS, log });
  agents.cache.start();
  lifecycle.onStop('agent cache', () => agents.cache.stop());
  return { agents, jobs: new ScriptJobStore(conn) };
}
