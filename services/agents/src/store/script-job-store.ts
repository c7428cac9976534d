import { scopeOfRecord, type TenantScope } from '@voiceapi/kit/grpc';
import { modelOf, stringIds, TenantCollection, type QueryShape } from '@voiceapi/kit/mongo';
import { Schema, type Connection } from 'mongoose';

/** A script to write: the agent's id is the `_id`, so one agent has at most one request. */
interface JobDoc {
  _id: string;
  tenantId: string;
  mode: 'live' | 'sandbox';
  generation: string;
  /** A worker's claim runs until then; a past claim (its worker died) may be taken over. */
  claimedUntil: Date;
  createdAt: Date;
}

export const jobSchema = new Schema<JobDoc>(
  {
    _id: String,
    tenantId: { type: String, required: true },
    mode: { type: String, required: true },
    generation: { type: String, required: true },
    claimedUntil: { type: Date, required: true },
    createdAt: { type: Date, required: true },
  },
  { collection: 'script_jobs', versionKey: false },
);
// Serves `open` (jobs no worker holds: never claimed, or their claim lapsed).
jobSchema.index({ claimedUntil: 1 });
export const jobQueryShapes: QueryShape[] = [{ name: 'open', equality: [], range: ['claimedUntil'] }];

export interface ScriptJob {
  agentId: string;
  scope: TenantScope;
  generation: string;
}

/** Script requests waiting for a worker: a small working set, every write by `_id`. */
export class ScriptJobStore {
  private readonly jobs: TenantCollection<JobDoc, string>;
  private readonly listeners: (() => void)[] = [];

  constructor(conn: Connection) {
    this.jobs = new TenantCollection(modelOf(conn, 'ScriptJob', jobSchema), stringIds, jobQueryShapes);
  }

  /**
   * Calls `listener` when this process records a request: its own worker takes it at once (every
   * replica runs the worker; no change stream, decision 0141). A request whose replica died is
   * taken over by any worker's timer once its claim lapses.
   */
  onRequested(listener: () => void): void {
    this.listeners.push(listener);
  }

  /** Records the request (replacing an older one for the agent: the newest generation wins). */
  async request(scope: TenantScope, agentId: string, generation: string, now: Date): Promise<void> {
    await this.jobs.deleteById(scope, agentId);
    await this.jobs.insert(scope, {
      _id: agentId,
      mode: scope.mode,
      generation,
      claimedUntil: new Date(0),
      createdAt: now,
    });
    for (const listener of this.listeners) listener();
  }

  /** Claims up to `limit` requests nobody holds; each claim is one conditional write by `_id`. */
  async claim(now: Date, claimMs: number, limit: number): Promise<ScriptJob[]> {
    const all = this.jobs.crossTenant('script worker: requests of every tenant');
    const open = await all.find({ claimedUntil: { $lte: now } }, { limit });
    const claimed: ScriptJob[] = [];
    for (const j of open) {
      const won = await all.updateById(
        j._id,
        { $set: { claimedUntil: new Date(now.getTime() + claimMs) } },
        { where: { claimedUntil: j.claimedUntil, generation: j.generation } },
      );
      if (won) claimed.push({ agentId: j._id, scope: scopeOfRecord(j.tenantId, j.mode), generation: j.generation });
    }
    return claimed;
  }

  /** Done with this generation (a newer request for the agent stays). */
  async done(job: ScriptJob): Promise<void> {
    await this.jobs.deleteById(job.scope, job.agentId, { where: { generation: job.generation } });
  }
}
