import { notFound, validationError, countFallback } from '@voiceapi/kit/errors';
import { type TenantScope } from '@voiceapi/kit/grpc';
import { type Logger } from '@voiceapi/kit/service';
import { newCallId, type Call } from '../domain/call';
import type { CallStore } from '../store/call-store';
import type { LineStore } from '../store/line-store';
import type { NumberStore } from '../store/number-store';
import type { TenantSettingsStore } from '../store/tenant-settings-store';
import type { CallRunner } from './call-runner';
import type { AnsweringAgents } from './ports';
import { E164 } from './numbers';

/** Inbound calls: answered by the number's agent or the default answering; same feed, billed at the inbound rate. */
export class Inbound {
  constructor(
    private readonly d: {
      numbers: NumberStore;
      calls: CallStore;
      lines: LineStore;
      settings: TenantSettingsStore;
      runner: CallRunner;
      agents: AnsweringAgents;
      maxCallSeconds: number;
      log: Logger;
      now: () => Date;
    },
  ) {}

  /** The carrier simulator rings the tenant's number; answers at once with the call's id. */
  async simulate(scope: TenantScope, toNumber: string, fromNumber: string, talkSeconds?: number): Promise<string> {
    const problems = [];
    if (!E164.test(toNumber))
      problems.push({ path: 'toNumber', message: 'must be an E.164 number, e.g. +14155550100' });
    if (!E164.test(fromNumber))
      problems.push({ path: 'fromNumber', message: 'must be an E.164 number, e.g. +14155550100' });
    if (
      talkSeconds !== undefined &&
      (!Number.isInteger(talkSeconds) || talkSeconds < 0 || talkSeconds > this.d.maxCallSeconds)
    ) {
      problems.push({
        path: 'durationSeconds',
        message: `must be a whole number of seconds from 0 to ${this.d.maxCallSeconds}`,
      });
    }
    if (problems.length > 0) throw validationError('invalid inbound call', problems);
    const number = await this.d.numbers.owned(scope, { phoneNumber: toNumber });
    if (!number) throw notFound('number');
    // Asked as the call rings, so a deactivated agent answers no call after its deactivation.
    const agent = await this.d.agents.answering(scope, number.id).catch((err: unknown) => {
      countFallback({ dependency: 'agents', operation: 'FindAnsweringAgent' }, err);
      this.d.log.warn({ err }, 'agents could not say who answers; the default answering takes the call');
      return null;
    });
    const now = this.d.now();
    const call: Call = {
      id: newCallId(),
      tenantId: scope.tenantId,
      direction: 'inbound',
      status: 'ringing',
      ...(agent && { agentId: agent.agentId, agentName: agent.agentName }),
      fromNumber,
      toNumber,
      startedAt: now,
      durationSeconds: 0,
      maxCallSeconds: this.d.maxCallSeconds,
      ...(talkSeconds !== undefined && { talkSeconds }),
      sandbox: false,
      holdFailed: false,
      billingStatus: 'pending',
      hasTranscript: false,
      hasAnalysis: false,
      hasRecording: false,
    };
    if (await this.d.calls.create(scope, call)) await this.d.runner.announce(call, 'call.started');
    const limit = await this.d.settings.maxConcurrentCalls(scope);
    if (!(await this.d.lines.take(scope, call.id, limit, now))) {
      // Every line of the tenant's package is busy: the caller hears busy, and the call is recorded.
      await this.d.runner.finish(
        call,
        { carrierCallId: '', outcome: 'busy', durationSeconds: 0, cutAtLimit: false },
        'concurrency_limit',
      );
      return call.id;
    }
    void this.d.runner
      .run(call)
      .catch((err: unknown) =>
        this.d.log.error({ err, callId: call.id }, 'inbound call could not be finished; recovery will'),
      );
    return call.id;
  }
}
