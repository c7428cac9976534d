import type { CarrierCallResult } from '../carrier/carrier';
import { withConversation } from './call-runner';

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
    expect(r.analysis).toEqual({ summary: conversation.summary, sentiment: 'positive', outcome: 'appointment_booked', optOut: false });
    expect(r).toMatchObject({ durationSeconds: 60, outcome: 'completed', carrierCallId: 'SIM1' });
  });

  it('leaves an unanswered call as the carrier ended it', () => {
    const missed: CarrierCallResult = { carrierCallId: 'SIM2', outcome: 'no_answer', durationSeconds: 0, cutAtLimit: false };
    expect(withConversation(missed, conversation)).toBe(missed);
  });
});
