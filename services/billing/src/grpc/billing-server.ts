import { validationError } from '@voiceapi/kit/errors';
import { registerService, requireTenant, type ServiceRegistration, pageAsked } from '@voiceapi/kit/grpc';
import { type Logger } from '@voiceapi/kit/service';
import { voiceapi } from '@voiceapi/proto';
import {
  available,
  type Direction,
  type Hold,
  type LedgerRow,
  type TransactionType,
  type WalletState,
} from '../domain/wallet';
import type { Billing } from '../usecases/billing';
import type { CallCharging } from '../usecases/calls';
import type { CallOutcome } from '../domain/call';

const { TransactionType: T, CallDirection: D } = voiceapi.billing.v1;
type ProtoTransaction = voiceapi.billing.v1.Transaction;

const TYPES: Record<TransactionType, number> = {
  top_up: T.TRANSACTION_TYPE_TOP_UP,
  call_deduction: T.TRANSACTION_TYPE_CALL_DEDUCTION,
  number_purchase: T.TRANSACTION_TYPE_NUMBER_PURCHASE,
  knowledge_upload: T.TRANSACTION_TYPE_KNOWLEDGE_UPLOAD,
  adjustment: T.TRANSACTION_TYPE_ADJUSTMENT,
};
const TYPE_OF = new Map<number, TransactionType>(Object.entries(TYPES).map(([k, v]) => [v, k as TransactionType]));

/** gRPC adapter: maps messages to use-case calls and domain objects back, nothing more. */
export function billingService(uc: Billing, charging: CallCharging, log: Logger): ServiceRegistration {
  return registerService(
    'voiceapi.billing.v1.BillingService',
    voiceapi.billing.v1.BillingServiceService,
    {
      getBalance: async (_req, ctx) => ({ balance: balance(await uc.balance(requireTenant(ctx))) }),
      listTransactions: async (req, ctx) => {
        const { page, limit } = pageAsked(req.page);
        const type = req.type === T.TRANSACTION_TYPE_UNSPECIFIED ? undefined : typeOf(req.type, 'type');
        const res = await uc.transactions(requireTenant(ctx), { page, limit, ...(type && { type }) });
        return {
          transactions: res.rows.map(transaction),
          page: { page, limit, total: res.total, hasMore: res.hasMore },
        };
      },
      topUp: async (req, ctx) => {
        const r = await uc.topUp(requireTenant(ctx), req.amount, req.reference, req.note);
        return { transaction: transaction(r.row!), balance: balance(r.state) };
      },
      debit: async (req, ctx) => {
        const r = await uc.debit(requireTenant(ctx), {
          reference: req.reference,
          amount: req.amount,
          type: typeOf(req.type, 'type'),
          description: req.description,
        });
        return { transaction: transaction(r.row!), balance: balance(r.state), replayed: r.replayed };
      },
      placeHold: async (req, ctx) => {
        const r = await uc.placeHold(requireTenant(ctx), {
          callId: req.callId,
          amount: req.amount,
          direction: direction(req.direction),
          expiresAt: req.expireTime ?? new Date(NaN),
        });
        return { hold: hold(r.hold!), balance: balance(r.state) };
      },
      captureHold: async (req, ctx) => {
        const r = await uc.capture(requireTenant(ctx), {
          callId: req.callId,
          amount: req.amount,
          description: req.description,
        });
        return { ...(r.row && { transaction: transaction(r.row) }), balance: balance(r.state), replayed: r.replayed };
      },
      releaseHold: async (req, ctx) => {
        const r = await uc.release(requireTenant(ctx), req.callId);
        return { balance: balance(r.state), released: r.released ?? false };
      },
      quoteCallHold: async (req, ctx) => {
        const q = await uc.quoteCallHold(requireTenant(ctx), direction(req.direction), req.maxCallSeconds);
        return {
          amount: q.amount,
          balance: balance(q.state),
          covered: q.covered,
          longestCoveredSeconds: q.longestCoveredSeconds,
        };
      },
      settleCalls: async (req, ctx) => {
        const outcomes = await charging.settleEnded(
          requireTenant(ctx),
          req.calls.map((c) => ({
            callId: c.callId,
            direction: direction(c.direction),
            durationSeconds: c.durationSeconds,
            holdFailed: c.holdFailed,
            endedAt: c.endTime ?? new Date(),
            ...(c.contactId && { contactId: c.contactId }),
            ...(c.campaignId && { campaignId: c.campaignId }),
            ...(c.agentId && { agentId: c.agentId }),
            ...(c.fromNumber && { fromNumber: c.fromNumber }),
          })),
        );
        return { settlements: outcomes.map(settlement) };
      },
      placeCallHolds: async (req, ctx) => {
        const holds = await uc.placeCallHolds(
          requireTenant(ctx),
          req.holds.map((h) => ({
            callId: h.callId,
            direction: direction(h.direction),
            maxCallSeconds: h.maxCallSeconds,
            expiresAt: h.expireTime ?? new Date(NaN),
          })),
        );
        return { holds };
      },
      // eslint-disable-next-line @typescript-eslint/require-await -- async so that a throw reaches the gRPC wrapper's .then() as a rejection
      getRateCard: async () => ({
        rateCard: {
          outboundPerMinute: uc.rates.outboundPerMinute,
          inboundPerMinute: uc.rates.inboundPerMinute,
          knowledgePerThousandWords: uc.rates.knowledgePerThousandWords,
        },
      }),
    },
    log,
  );
}

function settlement(o: CallOutcome): voiceapi.billing.v1.CallSettlement {
  return {
    callId: o.callId,
    billingStatus: o.status,
    creditsCharged: o.creditsCharged,
    ...(o.creditsError !== undefined && { creditsError: o.creditsError }),
    ...(o.transactionId !== undefined && { transactionId: o.transactionId }),
    ...(o.ledgerSeq !== undefined && { ledgerSeq: o.ledgerSeq }),
    ...(o.balanceAfter !== undefined && { balanceAfter: o.balanceAfter }),
    billTime: o.billedAt,
  };
}

function typeOf(v: number, path: string): TransactionType {
  const t = TYPE_OF.get(v);
  if (!t) throw validationError(`${path} must be a transaction type`, [{ path, message: 'unknown' }]);
  return t;
}

function direction(v: voiceapi.billing.v1.CallDirection): Direction {
  if (v === D.CALL_DIRECTION_OUTBOUND) return 'outbound';
  if (v === D.CALL_DIRECTION_INBOUND) return 'inbound';
  throw validationError('direction must be outbound or inbound', [{ path: 'direction', message: 'unknown' }]);
}

export function transaction(r: LedgerRow): ProtoTransaction {
  return {
    id: r.id,
    type: TYPES[r.type],
    amount: r.amount,
    balanceAfter: r.balanceAfter,
    ...(r.callId !== undefined && { callId: r.callId }),
    reference: r.reference,
    description: r.description,
    createTime: r.createdAt,
  };
}

function balance(s: WalletState): voiceapi.billing.v1.Balance {
  return {
    balance: s.balance,
    available: available(s),
    held: s.held,
    seq: s.seq,
    ...(s.updatedAt && { updateTime: new Date(s.updatedAt) }),
  };
}

function hold(h: Hold): voiceapi.billing.v1.Hold {
  return {
    callId: h.callId,
    amount: h.amount,
    direction: h.direction === 'outbound' ? D.CALL_DIRECTION_OUTBOUND : D.CALL_DIRECTION_INBOUND,
    createTime: new Date(h.createdAt),
    expireTime: new Date(h.expiresAt),
  };
}
