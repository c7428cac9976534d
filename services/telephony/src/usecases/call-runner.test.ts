// Over 300 lines because the cases of one module share its fixtures.
import { mongo } from 'mongoose';
import type { CarrierCallResult } from '../carrier/carrier';
import type { Call, CallCharge } from '../domain/call';
import { CallRunner, withConversation, type RunnerDeps } from './call-runner';

// The agent's conversation becomes the call's record: its turns spread over the talk time the
// carrier recorded, its summary and outcome the analysis; a call nobody answered keeps its own.

const answeredAt = new Date('2026-11-25T10:00:00Z');
const at = (s: number) => new Date(answeredAt.getTime() + s * 1000);
const carried: CarrierCallResult = {
  carrierCallId: 'SIM1',
  outcome: 'completed',
  durationSeconds: 60,
  cutAtLimit: false,
  answeredAt,
  transcript: [
    { role: 'agent', text: 'Hello', at: at(0) },
    { role: 'caller', text: 'Hi', at: at(45) },
  ],
  analysis: { summary: 'carrier', sentiment: 'neutral', outcome: 'x', optOut: false },
};
const conversation = {
  turns: [
    { role: 'agent' as const, text: 'Sunrise Clinic' },
    { role: 'caller' as const, text: 'A booking, please' },
    { role: 'agent' as const, text: 'Booked' },
    { role: 'caller' as const, text: 'Thanks' },
  ],
  summary: 'Appointment booked with Dr. Rivera at 15:30 (appointment apt-1).',
  outcome: 'appointment_booked',
};

describe('withConversation', () => {
  it('takes the agent’s turns over the talk time and its summary as the analysis; duration and outcome stay the carrier’s', () => {
    const r = withConversation(carried, conversation);
    expect(r.transcript!.map((t) => [t.role, t.text, (t.at.getTime() - answeredAt.getTime()) / 1000])).toEqual([
      ['agent', 'Sunrise Clinic', 0],
      ['caller', 'A booking, please', 15],
      ['agent', 'Booked', 30],
      ['caller', 'Thanks', 45],
    ]);
    expect(r.analysis).toEqual({
      summary: conversation.summary,
      sentiment: 'positive',
      outcome: 'appointment_booked',
      optOut: false,
    });
    expect(r).toMatchObject({ durationSeconds: 60, outcome: 'completed', carrierCallId: 'SIM1' });
  });

  it('leaves an unanswered call as the carrier ended it', () => {
    const missed: CarrierCallResult = {
      carrierCallId: 'SIM2',
      outcome: 'no_answer',
      durationSeconds: 0,
      cutAtLimit: false,
    };
    expect(withConversation(missed, conversation)).toBe(missed);
  });
});

describe('CallRunner.run', () => {
  // A carrier that answers at once and ends the call completed: what happens to our records
  // when the store is away at the answer is the point here.
  const carrier = {
    name: 'fake',
    longestMs: () => 5_000,
    recover: () => undefined,
    async place(
      req: { callId: string },
      hooks: { answered(at: Date, sid: string): Promise<void> },
    ): Promise<CarrierCallResult> {
      await hooks.answered(answeredAt, 'SIM1');
      return { ...carried, carrierCallId: 'SIM1' };
    },
  };
  const call: Call = {
    id: 'call-1',
    tenantId: 't-1',
    direction: 'outbound',
    status: 'ringing',
    fromNumber: '+18885550100',
    toNumber: '+14155550123',
    startedAt: answeredAt,
    durationSeconds: 0,
    maxCallSeconds: 120,
    sandbox: false,
    holdFailed: false,
    billingStatus: 'pending',
    hasTranscript: false,
    hasAnalysis: false,
    hasRecording: false,
  };

  /** The store's finish: the call as ended (null: it had ended already). */
  const finishing = () =>
    jest.fn<Promise<Call | null>, [string, Record<string, unknown>]>(async (_id, end) => ({ ...call, ...end }));

  const charged: CallCharge = {
    billingStatus: 'charged',
    creditsCharged: 10,
    transactionId: 'txn_1',
    ledgerSeq: 7,
    balanceAfter: 990,
    billedAt: at(61),
  };
  /** Billing as telephony reaches it: settles at once by default. */
  const settling = () => jest.fn<Promise<CallCharge>, [unknown, Call]>(async () => charged);

  function runnerWith(
    setAnswered: jest.Mock,
    finish = finishing(),
    settle = settling(),
    more: Record<string, unknown> = {},
    overrides: Record<string, unknown> = {},
  ) {
    const announced: string[] = [];
    const ended: string[] = [];
    const endEvents: { charge?: CallCharge }[] = [];
    const deps = {
      calls: { setAnswered, finish, byId: async () => null, ...more },
      recordings: { store: async () => ({ recordingDueAt: at(65) }), discard: async () => undefined },
      lines: { free: async () => undefined },
      rollups: { markDirty: async () => undefined },
      carrier,
      wallet: { settle },
      agents: {},
      events: {
        started: async (c: Call) => void announced.push(`call-started:${c.id}`),
        ended: async (c: Call, e: { charge?: CallCharge }) =>
          void (announced.push(`call-ended:${c.id}`), endEvents.push(e)),
        settled: async (c: Call, ch: CallCharge) => void announced.push(`call-settled:${c.id}:${ch.billingStatus}`),
        changed: async (c: Call, change: string) => void announced.push(`${change}:${c.id}:${c.status}`),
      },
      log: { warn: jest.fn(), info: jest.fn(), error: jest.fn(), debug: jest.fn() },
      now: () => at(60),
      metrics: { ended: { add: (n: number, a: { direction: string }) => ended.push(`${n} ${a.direction}`) } },
      ...overrides,
    } as unknown as RunnerDeps;
    return { runner: new CallRunner(deps), finish, announced, ended, endEvents, settle };
  }

  it('counts a call ended once, by direction, where its end is written; a repeated finish of an ended call is not counted', async () => {
    const setAnswered = jest.fn().mockImplementation(async () => ({ ...call, status: 'in_progress', answeredAt }));
    const finish = finishing();
    const { runner, ended } = runnerWith(setAnswered, finish);
    await runner.run(call);
    expect(ended).toEqual(['1 outbound']);
    finish.mockResolvedValueOnce(null); // recovery finishing it again: the row had ended
    await runner.finish(call, carried);
    expect(ended).toEqual(['1 outbound']);
  });

  /** What an answered call that ended completed announces, in order: in progress, then completed. */
  const ANSWERED_THEN_ENDED = [
    'call-started:call-1',
    'call.answered:call-1:in_progress',
    'call-ended:call-1',
    'call.ended:call-1:completed',
    'call.billed:call-1:completed',
  ];

  // An inbound call's row records its answer (its hold's outcome); a sandbox one places no hold.
  const inbound: Call = { ...call, direction: 'inbound', sandbox: true };

  it("moves no outbound row on the answer: the start and the feed's change carry the call in progress, the end its answer time", async () => {
    const setAnswered = jest.fn();
    const { runner, finish, announced } = runnerWith(setAnswered);
    await runner.run(call);
    expect(setAnswered).not.toHaveBeenCalled();
    expect(announced).toEqual(ANSWERED_THEN_ENDED);
    expect(finish.mock.calls[0]![1]).toMatchObject({ status: 'completed', answeredAt, carrierCallId: 'SIM1' });
  });

  it('ends an outbound call the carrier failed after its answer with the answer time and carrier id', async () => {
    const failing = {
      ...carrier,
      async place(_req: { callId: string }, hooks: { answered(at: Date, sid: string): Promise<void> }) {
        await hooks.answered(answeredAt, 'SIM9');
        throw new Error('the carrier dropped the call');
      },
    };
    const { runner, finish } = runnerWith(jest.fn());
    (runner as unknown as { d: { carrier: unknown } }).d.carrier = failing;
    await runner.run(call);
    expect(finish.mock.calls[0]![1]).toMatchObject({
      outcome: 'failed',
      endReason: 'carrier_error',
      answeredAt,
      carrierCallId: 'SIM9',
    });
  });

  it('records an inbound answer once the store is back, and ends the call as the carrier did', async () => {
    const setAnswered = jest
      .fn()
      .mockRejectedValueOnce(new mongo.MongoNetworkError('connection reset'))
      .mockImplementation(async () => ({ ...inbound, status: 'in_progress', answeredAt }));
    const { runner, finish, announced } = runnerWith(setAnswered);
    await runner.run(inbound);
    expect(setAnswered).toHaveBeenCalledTimes(2);
    // The feed's changes carry the call as it is after each: in progress, then completed.
    expect(announced).toEqual(ANSWERED_THEN_ENDED);
    expect(finish.mock.calls[0]![1]).toMatchObject({ status: 'completed', outcome: 'completed', durationSeconds: 60 });
  });

  it('never hangs up on a person because the answer could not be recorded: the end carries the answer time', async () => {
    const setAnswered = jest.fn().mockRejectedValue(new Error('the store refused the write'));
    const { runner, finish, announced } = runnerWith(setAnswered);
    await runner.run(inbound);
    expect(announced).toEqual(['call-ended:call-1', 'call.ended:call-1:completed', 'call.billed:call-1:completed']);
    expect(finish.mock.calls[0]![1]).toMatchObject({ status: 'completed', outcome: 'completed', answeredAt });
    expect(finish.mock.calls[0]![1]).not.toHaveProperty('endReason', 'carrier_error');
  });

  it('settles the call with billing as it ends: the end write and the end event carry the charge billing answered', async () => {
    const setAnswered = jest.fn().mockImplementation(async () => ({ ...call, status: 'in_progress', answeredAt }));
    const { runner, finish, endEvents, settle } = runnerWith(setAnswered);
    await runner.run(call);
    // Billing is told the facts of the end: the carrier's talk time, the end, the hold.
    expect(settle).toHaveBeenCalledTimes(1);
    expect(settle.mock.calls[0]![1]).toMatchObject({
      id: 'call-1',
      durationSeconds: 60,
      endedAt: at(60),
      holdFailed: false,
    });
    expect(endEvents[0]!.charge).toEqual(charged);
    expect(finish.mock.calls[0]![1]).toMatchObject({ billingStatus: 'charged', creditsCharged: 10, balanceAfter: 990 });
    expect(finish.mock.calls[0]![1]).not.toHaveProperty('settleDueAt');
  });

  it('ends a call pending when billing cannot answer, and settles it on a later pass: the charge written and announced', async () => {
    const setAnswered = jest.fn().mockImplementation(async () => ({ ...call, status: 'in_progress', answeredAt }));
    const settle = settling();
    settle.mockRejectedValueOnce(new Error('billing unavailable'));
    const ended: Call = {
      ...call,
      status: 'completed',
      outcome: 'completed',
      durationSeconds: 60,
      endedAt: at(60),
      settleDueAt: at(65),
    };
    const setBilling = jest.fn(async (_id: string, _t: string, fields: Partial<Call>) => ({ ...ended, ...fields }));
    const dueForSettlement = jest.fn(async () => [ended]);
    const { runner, finish, endEvents, announced } = runnerWith(setAnswered, finishing(), settle, {
      setBilling,
      dueForSettlement,
    });
    await runner.run(call);
    expect(endEvents[0]).not.toHaveProperty('charge');
    expect(finish.mock.calls[0]![1]).toMatchObject({ status: 'completed', settleDueAt: at(60 + 5) });
    expect(finish.mock.calls[0]![1]).not.toHaveProperty('billingStatus');
    expect(announced).not.toContain('call.billed:call-1:completed');

    expect(await runner.settlePending(200)).toBe(1);
    expect(setBilling).toHaveBeenCalledWith('call-1', 't-1', {
      billingStatus: 'charged',
      creditsCharged: 10,
      balanceAfter: 990,
    });
    expect(announced.slice(-2)).toEqual(['call-settled:call-1:charged', 'call.billed:call-1:completed']);
  });

  it('leaves a pending call for the next pass while billing stays away', async () => {
    const ended: Call = {
      ...call,
      status: 'completed',
      outcome: 'completed',
      durationSeconds: 60,
      endedAt: at(60),
      settleDueAt: at(65),
    };
    const setBilling = jest.fn();
    const settle = jest.fn(async () => Promise.reject(new Error('billing unavailable')));
    const { runner, announced } = runnerWith(jest.fn(), finishing(), settle as never, {
      setBilling,
      dueForSettlement: async () => [ended],
    });
    expect(await runner.settlePending(200)).toBe(0);
    expect(setBilling).not.toHaveBeenCalled();
    expect(announced).toEqual([]);
  });

  it('counts each ended call charged once: in time as it ends, late when its minute passes unsettled, not again once settled', async () => {
    let nowS = 60;
    const counted: Record<string, number> = {};
    const count = { add: (n: number, a: { late: string }) => void (counted[a.late] = (counted[a.late] ?? 0) + n) };
    const ended: Call = { ...call, status: 'completed', outcome: 'completed', endedAt: at(60), settleDueAt: at(65) };
    const settle = settling();
    const { runner } = runnerWith(
      jest.fn(),
      finishing(),
      settle,
      {
        setBilling: async (_id: string, _t: string, fields: Partial<Call>) => ({ ...ended, ...fields }),
        dueForSettlement: async () => [ended],
      },
      { now: () => at(nowS), metrics: { ended: { add: () => undefined }, charged: count } },
    );
    expect(counted).toEqual({ false: 0, true: 0 }); // both series from the start
    // Charged as it ended: in time.
    await runner.finish(
      { ...call, status: 'in_progress' },
      { carrierCallId: 'c', outcome: 'completed', durationSeconds: 30, cutAtLimit: false },
    );
    expect(counted).toEqual({ false: 1, true: 0 });
    // Billing away for two minutes: the pass leaves it pending; a minute after its end it counts late, once.
    settle.mockRejectedValue(new Error('billing unavailable'));
    nowS = 70;
    expect(await runner.settlePending(10)).toBe(0);
    nowS = 121;
    await new Promise((r) => setTimeout(r, 1_300)); // the count's own sweep, every second
    expect(counted).toEqual({ false: 1, true: 1 });
    nowS = 180;
    settle.mockImplementation(async () => ({
      billingStatus: 'charged',
      creditsCharged: 10,
      transactionId: 'txn_2',
      ledgerSeq: 8,
      balanceAfter: 980,
      billedAt: at(180),
    }));
    expect(await runner.settlePending(10)).toBe(1);
    expect(counted).toEqual({ false: 1, true: 1 });
  });
});
