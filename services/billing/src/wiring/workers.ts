import { cachedRead, serviceMetrics } from '@voiceapi/kit/metrics';
import { Lease, LEASE_TTL_MS } from '@voiceapi/kit/mongo';
import type { OpenedService } from '@voiceapi/kit/service';
import { Worker } from '@voiceapi/kit/work';
import type { Config } from '../config';
import { LedgerAudit } from '../workers/ledger-audit';
import { Sweeper } from '../workers/sweeper';
import type { Stores } from './stores';
import type { UseCases } from './usecases';

/** The sweeper and the ledger audit, on one lease, and the gauge of what the audit found. */
export function startWorkers(
  { cfg, conn, log, lifecycle }: OpenedService<Config>,
  { store, calls, audits }: Stores,
  { announcements, wallets, charging }: UseCases,
) {
  const metrics = serviceMetrics('billing');
  const sweeper = new Sweeper({
    calls,
    charging,
    store,
    wallets,
    announce: (scope, from, to) => announcements.catchUp(scope, from, to),
    log,
    settleAfterMs: cfg.SETTLE_AFTER_MS,
  });
  // One replica sweeps and audits the ledger at a time: two workers on one lease.
  const lease = new Lease(conn, 'billing-sweeper', cfg.INSTANCE_ID, Math.max(LEASE_TTL_MS, cfg.SWEEP_INTERVAL_MS * 3));
  const sweeping = new Worker({
    service: 'billing',
    job: 'sweeper',
    everyMs: cfg.SWEEP_INTERVAL_MS,
    lease,
    log,
    pass: () => sweeper.sweep(),
  });
  sweeping.start();
  lifecycle.onStop('sweeper', () => sweeping.stop());

  const audit = new LedgerAudit({
    store,
    audits,
    log,
    now: () => new Date(),
    audited: metrics.counter('ledger.audited_wallets', {
      description: 'Wallets the ledger audit checked (their entries since its last pass)',
      unit: '{wallet}',
    }),
  });
  const auditing = new Worker({
    service: 'billing',
    job: 'ledger-audit',
    everyMs: cfg.LEDGER_AUDIT_INTERVAL_MS,
    lease,
    log,
    pass: () => audit.pass(),
  });
  auditing.start();
  lifecycle.onStop('ledger audit', () => auditing.stop());
  // What the audit found, from its marks: every replica reports the same count (max, not sum).
  const unbalanced = cachedRead(10_000, () => audits.unbalanced());
  const unbalancedGauge = metrics.gauge(
    'ledger.unbalanced_wallets',
    {
      description: 'Wallets the ledger audit found whose balance is not what their ledger rows sum to',
      unit: '{wallet}',
    },
    async () => [{ value: await unbalanced(), attributes: {} }],
  );
  lifecycle.onStop('ledger audit gauge', () => unbalancedGauge.stop());
  return { sweeper, audit };
}
