import { contextOf, type PromiseClient } from '@voiceapi/kit/grpc';
import { voiceapi } from '@voiceapi/proto';
import type { AnsweringAgents } from '../usecases/ports';

const { Speaker } = voiceapi.agents.v1;
type AgentsClient = Pick<
  PromiseClient<typeof voiceapi.agents.v1.AgentsServiceService>,
  'findAnsweringAgent' | 'holdConversation'
>;

/** Who answers an inbound call, and the conversation it holds, over agents' gRPC API. */
export function answeringAgents(agents: AgentsClient): AnsweringAgents {
  return {
    async answering(scope, phoneNumberId) {
      const r = await agents.findAnsweringAgent({ phoneNumberId }, contextOf(scope));
      return r.agentId ? { agentId: r.agentId, agentName: r.agentName ?? '' } : null;
    },
    async converse(scope, call, timeoutMs) {
      const r = await agents.holdConversation(
        { agentId: call.agentId, callId: call.callId, callerNumber: call.callerNumber, answerTime: call.answeredAt },
        contextOf(scope),
        { timeoutMs },
      );
      const turns = r.turns.map((t) => ({
        role: t.speaker === Speaker.SPEAKER_CALLER ? ('caller' as const) : ('agent' as const),
        text: t.text,
      }));
      return { turns, summary: r.summary, outcome: r.outcome };
    },
  };
}
