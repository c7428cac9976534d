import { commonEnv, grpcServerEnv, loadConfig } from '@voiceapi/kit';
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
  ...grpcServerEnv,
  GRPC_HOST: z.string().default('127.0.0.1'),
  GRPC_PORT: z.coerce.number().int().min(0).max(65535).default(50062),
  MONGO_DB: z.string().default('billing'),
  /** Credits per started minute of an outbound call. */
  RATE_OUTBOUND_PER_MINUTE: rate(2),
  /** Credits per started minute of an inbound call. */
  RATE_INBOUND_PER_MINUTE: rate(1),
  /** Credits per started 1,000 words of a knowledge upload (at least one unit per upload). */
  RATE_KNOWLEDGE_PER_THOUSAND_WORDS: rate(1),
  SWEEP_INTERVAL_MS: z.coerce.number().int().min(100).default(30_000),
  /** An ended call still unsettled after this long is settled by the sweeper. */
  SETTLE_AFTER_MS: z.coerce.number().int().min(0).default(60_000),
  /** Decision 0137: keep `compat` until no billing 1.2 runs: 1.2 (or a rollback to it) can't follow a `fixed` entry. */
  WALLET_ENTRY_FORMAT: z.enum(['compat', 'fixed']).default('fixed'),
  /** How often the ledger audit checks the wallets changed since its last pass. */
  LEDGER_AUDIT_INTERVAL_MS: z.coerce.number().int().min(1_000).default(60_000),
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
