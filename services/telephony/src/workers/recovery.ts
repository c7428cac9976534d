import { scopeOfRecord, type TenantScope } from '@voiceapi/kit/grpc';
import { type Logger } from '@voiceapi/kit/service';
import type { CarrierAdapter } from '../carrier/carrier';
import { ACTIVE_STATUSES } from '../domain/call';
import type { CallStore } from '../store/call-store';
import type { LineStore } from '../store/line-store';
import { carrierRequest, type CallRunner } from '../usecases/call-runner';

/** A call in progress is someone else's until this long past its due end. */
const GRACE_MS = 30_000;
/** A line or queued call row this old with nothing behind it was left by a crash. */
const STALE_MS = 120_000;
/**
 * A row `queued` this long and not being set up here was left by a replica that died or lost the lease: longer
 * than a claim and a hold take, so a live try is never overtaken (and queued → ringing happens once anyway).
 */
const QUEUED_STALE_MS = 15_000;

/**
 * Finishes what a crashed replica was carrying, from the lines in use: calls past their due end are ended as the
 * carrier reports, unrung ones failed, queued ones whose dial still waits handed back, orphan lines freed.
 */
export class Recovery {
  constructor(
    private readonly d: {
      lines: LineStore;
      calls: CallStore;
      /** Whether a dial still waits to be placed (held here, or queued by a replica of an older release). */
      waiting: (scope: TenantScope, dialId: string) => Promise<boolean>;
      runner: CallRunner;
      carrier: CarrierAdapter;
      log: Logger;
      now: () => Date;
      isDispatching: (dialId: string) => boolean;
    },
  ) {}

  async runOnce(): Promise<{ finished: number; freed: number }> {
    const now = this.d.now();
    let finished = 0;
    let freed = 0;
    for (const line of await this.d.lines.all()) {
      if (this.d.runner.carrying.has(line.callId)) continue;
      const scope = scopeOfRecord(line.tenantId);
      const call = await this.d.calls.byId(line.callId);
      if (!call || !ACTIVE_STATUSES.includes(call.status)) {
        if (call || now.getTime() - line.takenAt.getTime() > STALE_MS) {
          await this.d.lines.free(scope, line.callId);
          freed++;
        }
        continue;
      }
      if (call.status === 'queued') {
        if (
          now.getTime() - call.startedAt.getTime() < QUEUED_STALE_MS ||
          (call.dialId && this.d.isDispatching(call.dialId))
        )
          continue;
        // Its dial still waits: the line is freed and the dispatcher dials again with the same row
        // (failing it would leave the lead uncalled).
        if (call.dialId && (await this.d.waiting(scope, call.dialId))) {
          this.d.log.info({ callId: call.id }, 'dialling again a call its replica left queued');
          await this.d.lines.free(scope, line.callId);
          freed++;
          continue;
        }
        if (now.getTime() - call.startedAt.getTime() < STALE_MS) continue;
        await this.d.runner.finish(
          call,
          { carrierCallId: '', outcome: 'failed', durationSeconds: 0, cutAtLimit: false },
          'not_recovered',
        );
        finished++;
        continue;
      }
      const result = this.d.carrier.recover(carrierRequest(call), call.startedAt, new Date(now.getTime() - GRACE_MS));
      if (!result) continue;
      this.d.log.info({ callId: call.id }, 'finishing a call its replica left in progress');
      await this.d.runner.finish(call, result);
      finished++;
    }
    return { finished, freed };
  }
}
