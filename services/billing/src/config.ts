import { commonEnv, loadConfig, ownDatabase } from '@voiceapi/kit/config';
import { grpcServiceEnv } from '@voiceapi/kit/grpc';
import { grpcCallees } from '@voiceapi/proto';
import { z } from 'zod';

/** Whole credits per unit, ≥ 0; an empty, negative or fractional rate stops the service at start. */
const rate = (fallback: number) =>
  z
    .string()
    .default(String(fallback))
    .superRefine((v, ctx) => {
      if (v.trim() === '')
        ctx.addIssue({ code: 'custom', message: 'is missing (empty); set a whole number of credits ≥ 0' });
      else if (!/^\d+$/.test(v.trim()))
        ctx.addIssue({ code: 'custom', message: `must be a whole number of credits ≥ 0, not ${JSON.stringify(v)}` });
    })
    .transform((v) => Number(v.trim()));

export const configSchema = z.object({
  ...commonEnv,
  ...grpcServiceEnv(grpcCallees.billing),
  ...ownDatabase('billing'),
  RATE_OUTBOUND_PER_MINUTE: rate(2).describe(
    'credits per started minute of an outbound call (whole credits; an empty, negative or fractional rate stops ' +
      'the service at start)',
  ),
  RATE_INBOUND_PER_MINUTE: rate(1).describe('credits per started minute of an inbound call (whole credits)'),
  RATE_KNOWLEDGE_PER_THOUSAND_WORDS: rate(1).describe(
    'credits per started 1,000 words of a knowledge upload (whole credits; at least one unit per upload)',
  ),
  SWEEP_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(100)
    .default(30_000)
    .describe(
      'how often the sweeper settles what no event settled: failed charges, expired holds, entries a crash left ' +
        'unannounced',
    ),
  SETTLE_AFTER_MS: z.coerce
    .number()
    .int()
    .min(0)
    .default(60_000)
    .describe('an ended call whose charge failed is settled by the sweeper after this'),
  /** A billing 1.2 replica (or a rollback to 1.2) can't follow a `fixed` entry. */
  WALLET_ENTRY_FORMAT: z
    .enum(['compat', 'fixed'])
    .default('fixed')
    .describe(
      '`fixed`: entries of one size whatever the calls in flight; `compat`: every entry also lists the open holds, ' +
        'as billing 1.2 reads them, only while 1.2 replicas may run (decision 0137)',
    ),
  LEDGER_AUDIT_INTERVAL_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .default(60_000)
    .describe('how often the ledger audit checks the wallets changed since its last pass'),
});

export type Config = z.infer<typeof configSchema>;
export const readConfig = (env?: Record<string, string | undefined>): Readonly<Config> => loadConfig(configSchema, env);

export interface RateCard {
  outboundPerMinute: number;
  inboundPerMinute: number;
  knowledgePerThousandWords: number;
}

export const rateCard = (cfg: Config): RateCard => ({
  outboundPerMinute: cfg.RATE_OUTBOUND_PER_MINUTE,
  inboundPerMinute: cfg.RATE_INBOUND_PER_MINUTE,
  knowledgePerThousandWords: cfg.RATE_KNOWLEDGE_PER_THOUSAND_WORDS,
});
