import { PageQuery, Pagination } from '../../http/pagination';
import { name, z } from '../../http/zod';

/** The HTTP shapes of the credit wallet and its ledger (../shared/guide/api-decisions.md, "Credits", "Billing semantics"). */

/** The largest top-up: amounts are whole credits, and a top-up is a positive integer up to this. */
export const MAX_TOP_UP = 1_000_000_000;

export const TRANSACTION_TYPES = [
  'top_up',
  'call_deduction',
  'number_purchase',
  'knowledge_upload',
  'adjustment',
] as const;

export const TransactionType = z.enum(TRANSACTION_TYPES).openapi({
  description:
    '`top_up` (operator top-up), `call_deduction` (a call, with its `callId`), `number_purchase`, `knowledge_upload`, `adjustment`',
  example: 'call_deduction',
});

export const TransactionsQuery = PageQuery.extend({
  type: TransactionType.optional().openapi({
    description: 'Only rows of this type (`call_deduction` selects call usage); any other value is refused with 400',
  }),
});

const ISO = '2026-11-22T09:30:00.000Z';

const credits = (description: string) => z.number().int().openapi({ description });

const transactionFields = z.object({
  id: z.string(),
  type: TransactionType,
  amount: credits(
    'Whole credits, signed: top-ups are positive, debits negative. Ledger amounts are authoritative: reconcile with them, not with duration × an assumed rate',
  ),
  balanceAfter: credits("The balance right after this row: the previous row's `balanceAfter` plus this row's `amount`"),
  callId: z
    .string()
    .nullable()
    .openapi({ description: 'The call a `call_deduction` row charges; null on every other row' }),
  reference: z
    .string()
    .openapi({ description: 'Unique per tenant: what the row is for (`call:<callId>`, `top_up:<uuid>`, …)' }),
  description: z.string(),
  createdAt: z.iso.datetime(),
});

const CALL_ROW: z.infer<typeof transactionFields> = {
  id: '665f1c2b9d3e4a0012345679',
  type: 'call_deduction',
  amount: -4,
  balanceAfter: 996,
  callId: '665f1c2b9d3e4a00123456aa',
  reference: 'call:665f1c2b9d3e4a00123456aa',
  description: 'Outbound call, 2 started minutes',
  createdAt: ISO,
};

const TOP_UP_ROW: z.infer<typeof transactionFields> = {
  id: '665f1c2b9d3e4a0012345678',
  type: 'top_up',
  amount: 1000,
  balanceAfter: 1000,
  callId: null,
  reference: 'top_up:0b7e6c1e-8d1a-4f57-9a43-5c2f0e1d9b11',
  description: 'Invoice 2026-117',
  createdAt: '2026-11-21T16:00:00.000Z',
};

export const Transaction = transactionFields.openapi('CreditTransaction', {
  description: 'One ledger row. The balance is the sum of all ledger amounts.',
  example: CALL_ROW,
});

export const Balance = z
  .object({
    balance: credits('Credits in the wallet: the sum of all ledger amounts (never below zero)'),
    available: credits('`balance` − `held`: what new calls and purchases can spend now'),
    held: credits('Credits reserved by live calls in progress (a hold is not a ledger row)'),
    updatedAt: z.iso
      .datetime()
      .nullable()
      .openapi({ description: 'When the wallet last changed; null for a wallet that never did' }),
  })
  .openapi('CreditBalance', { example: { balance: 996, available: 976, held: 20, updatedAt: ISO } });

export const TransactionPage = z.object({ transactions: z.array(Transaction), pagination: Pagination }).openapi({
  example: {
    transactions: [CALL_ROW, TOP_UP_ROW],
    pagination: { page: 1, limit: 25, total: 2, totalPages: 1, hasMore: false },
  },
});

export const TopUp = z
  .strictObject({
    amount: z
      .number()
      .int()
      .min(1)
      .max(MAX_TOP_UP)
      .openapi({ description: `Whole credits to add, 1 to ${MAX_TOP_UP.toLocaleString('en-US')}`, example: 1000 }),
    note: name(500).optional().openapi({
      description:
        'Kept with the top-up row. Leading and trailing white space is trimmed; 1–500 characters remain. Control characters (tab and line breaks included) are refused',
      example: 'Invoice 2026-117',
    }),
  })
  .openapi('CreditTopUp');

export const TopUpResult = z
  .object({
    balance: credits('The balance after the top-up'),
    transaction: Transaction,
  })
  .openapi({ example: { balance: 1000, transaction: TOP_UP_ROW } });
