import type { Connection } from 'mongoose';
import { stateProblems, type WalletState } from '../src/domain/wallet';

interface RawEntry {
  seq: number;
  kind: string;
  amount?: number;
  balanceAfter?: number;
  callId?: string;
  reference?: string;
  state: WalletState;
}

/**
 * Everything that must hold for a tenant's wallet whatever happened before: the chain is
 * contiguous from 1, every state is sound, the rows' balanceAfter form one serial chain, the
 * balance is the sum of the rows, no call and no reference has two rows. Returns the problems.
 */
export async function walletProblems(conn: Connection, tenantId: string): Promise<string[]> {
  const entries = (await conn
    .collection('wallet_entries')
    .find({ tenantId })
    .sort({ seq: 1 })
    .toArray()) as unknown as RawEntry[];
  const problems: string[] = [];
  let balance = 0;
  const calls = new Set<string>();
  const refs = new Set<string>();
  entries.forEach((e, i) => {
    if (e.seq !== i + 1) problems.push(`entry ${i + 1} is missing (found ${e.seq})`);
    problems.push(...stateProblems(e.state).map((p) => `after ${e.seq}: ${p}`));
    if (e.kind !== 'ledger') {
      if (e.state.balance !== balance) problems.push(`entry ${e.seq} (${e.kind}) changed the balance`);
      return;
    }
    balance += e.amount!;
    if (e.balanceAfter !== balance || e.state.balance !== balance)
      problems.push(`row ${e.seq}: balanceAfter ${e.balanceAfter}, but the rows sum to ${balance}`);
    if (e.callId !== undefined && e.callId !== null) {
      if (calls.has(e.callId)) problems.push(`call ${e.callId} has two rows`);
      calls.add(e.callId);
    }
    if (refs.has(e.reference!)) problems.push(`reference ${e.reference} has two rows`);
    refs.add(e.reference!);
  });
  return problems;
}
