import { mongo, type Connection } from 'mongoose';
import { available, openHoldCount, type EntryChange, type WalletState } from '../src/domain/wallet';

/** Checks the invariants of one state; the tests run it after every scenario. */
export function stateProblems(s: WalletState): string[] {
  const problems: string[] = [];
  if (s.holds !== undefined) {
    const held = s.holds.reduce((n, h) => n + h.amount, 0);
    if (held !== s.held) problems.push(`held ${s.held} is not the sum of the holds (${held})`);
  }
  if (s.held < 0 || openHoldCount(s) < 0) problems.push(`held ${s.held} in ${openHoldCount(s)} holds is below zero`);
  if (s.held > 0 !== openHoldCount(s) > 0) problems.push(`held ${s.held} in ${openHoldCount(s)} holds`);
  if (s.balance < 0) problems.push(`balance ${s.balance} is below zero`);
  if (available(s) < 0) problems.push(`available ${available(s)} is below zero`);
  if (!Number.isSafeInteger(s.balance)) problems.push(`balance ${s.balance} is not a whole number`);
  return problems;
}

interface RawEntry {
  seq: number;
  kind: string;
  amount?: number;
  balanceAfter?: number;
  callId?: string;
  released?: number;
  reference?: string;
  change?: EntryChange;
  state: WalletState;
}

/** A fixed-size entry's ceiling (decision 0137): the same at 10 calls in flight as at 1,000. */
export const MAX_FIXED_ENTRY_BYTES = 2_048;

/**
 * Everything that must hold for a tenant's wallet whatever happened before: the chain is
 * contiguous from 1, every state is sound, the rows' balanceAfter form one serial chain, the
 * balance is the sum of the rows, no call and no reference has two rows; each hold is closed at
 * most once, `held` and the count of open holds are what the holds placed and closed so far
 * say, in either format, and an entry that lists no holds is under 2 KB. Returns the problems.
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
  const open = new Map<string, number>();
  let held = 0;
  entries.forEach((e, i) => {
    if (e.seq !== i + 1) problems.push(`entry ${i + 1} is missing (found ${e.seq})`);
    problems.push(...stateProblems(e.state).map((p) => `after ${e.seq}: ${p}`));
    if (!e.state.holds && mongo.BSON.calculateObjectSize(e) > MAX_FIXED_ENTRY_BYTES)
      problems.push(`entry ${e.seq} is ${mongo.BSON.calculateObjectSize(e)} bytes`);
    const hold = e.change?.kind === 'hold' ? e.change.hold : undefined;
    const closing = e.kind === 'ledger' ? e.callId : e.change?.kind === 'release' ? e.change.callId : undefined;
    if (hold) {
      if (open.has(hold.callId)) problems.push(`entry ${e.seq} holds call ${hold.callId} again while its hold is open`);
      open.set(hold.callId, hold.amount);
      held += hold.amount;
    } else if (closing !== undefined && closing !== null) {
      const amount = open.get(closing);
      const said = e.kind === 'ledger' ? e.released : e.change?.kind === 'release' ? e.change.released : undefined;
      if (said !== undefined && said !== (amount ?? 0))
        problems.push(`entry ${e.seq} says it released ${said} of call ${closing}, whose hold was ${amount ?? 0}`);
      if (amount !== undefined) {
        open.delete(closing);
        held -= amount;
      }
    }
    if (e.state.held !== held) problems.push(`after ${e.seq}: held ${e.state.held}, the open holds sum to ${held}`);
    if (openHoldCount(e.state) !== open.size)
      problems.push(`after ${e.seq}: ${openHoldCount(e.state)} open holds, ${open.size} placed and not closed`);
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
