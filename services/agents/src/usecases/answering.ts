import { type SecretBox } from '@voiceapi/kit/crypto';
import { DomainError, notFound, orFallback } from '@voiceapi/kit/errors';
import { type TenantScope } from '@voiceapi/kit/grpc';
import type { CustomApi, CustomApiTarget } from '../custom-api/custom-api';
import type { Agent } from '../domain/agent';
import { openingLine } from '../script/generator';
import type { AgentStore } from '../store/agent-store';
import { customApiTarget } from './custom-api-target';
import type { Companies } from './ports';

export type StepName = 'crm_lookup' | 'validate' | 'slots' | 'appointments';
export interface Step {
  name: StepName;
  ok: boolean;
  /** Why it failed, as the tenant may read it (never a secret or a stack trace). */
  problem?: string;
}
export interface Turn {
  speaker: 'agent' | 'caller';
  text: string;
}
export type ConversationOutcome =
  'appointment_booked' | 'appointment_not_booked' | 'caller_not_validated' | 'enquiry_answered';
export interface Conversation {
  turns: Turn[];
  summary: string;
  outcome: ConversationOutcome;
  steps: Step[];
  appointmentId?: string;
}

export interface AnsweringDeps {
  agents: AgentStore;
  companies: Companies;
  customApi: CustomApi;
  secrets: SecretBox;
}

/**
 * Inbound calls answered by agents: which agent answers a number (its active one, the latest
 * activated when there are more), and the conversation it holds. The simulated caller asks for an
 * appointment; the agent uses the tenant's custom API as its flags say, in the decisions file's
 * order: CRM lookup, validation, slots, booking. A failing step is left out and named; it never
 * fails the call.
 */
export class Answering {
  constructor(private readonly d: AnsweringDeps) {}

  async answeringAgent(scope: TenantScope, phoneNumberId: string): Promise<Pick<Agent, 'id' | 'name'> | null> {
    const active = (await this.d.agents.onNumber(scope, phoneNumberId)).filter((a) => a.status === 'active');
    const latest = active.sort(
      (a, b) => (b.activatedAt ?? b.updatedAt).getTime() - (a.activatedAt ?? a.updatedAt).getTime(),
    )[0];
    return latest ? { id: latest.id, name: latest.name } : null;
  }

  async holdConversation(
    scope: TenantScope,
    agentId: string,
    callerNumber: string,
    answeredAt: Date,
  ): Promise<Conversation> {
    // Answering goes on when the agent was deactivated mid-call; a deleted one has no conversation.
    const found = await this.d.agents.getWithSealedSecret(scope, agentId);
    if (!found) throw notFound('agent');
    const { agent } = found;
    // The opening names the company only when it can be read: no call is refused for it.
    const company = agent.companyId
      ? await orFallback(
          { dependency: 'companies', operation: 'GetCompany' },
          () => this.d.companies.get(scope, agent.companyId!),
          () => null,
        )
      : null;
    const talk = new Talk(
      agent.script?.opening ??
        openingLine({
          ...(agent.greetingMessage !== undefined && { greetingMessage: agent.greetingMessage }),
          ...(company && { company }),
        }),
    );
    talk.caller('Hello, I would like to book an appointment, please.');
    const target = customApiTarget(this.d.secrets, scope, agent, found.sealedSecret);
    const org = company?.name ?? 'the practice';
    if (!target) {
      talk.agent(`I have noted your request; someone from ${org} will call you back to confirm a time.`);
      return talk.end(
        'enquiry_answered',
        'The caller asked for an appointment; the request was noted (the agent has no custom API).',
      );
    }
    return this.book(scope, agent, target, callerNumber, company?.timezone, answeredAt, talk, org);
  }

  private async book(
    scope: TenantScope,
    agent: Agent,
    target: CustomApiTarget,
    phone: string,
    timezone: string | undefined,
    answeredAt: Date,
    talk: Talk,
    org: string,
  ): Promise<Conversation> {
    const api = this.d.customApi;
    const lookup = await talk.step('crm_lookup', () => api.crmLookup(target, phone));
    const record = lookup?.found ? lookup.record : undefined;
    if (lookup)
      talk.agent(
        lookup.found
          ? `Thank you${nameIn(record)}. I have found your record.`
          : 'Thank you. I could not find a record for this number, so I will take your details.',
      );
    else talk.agent('I cannot reach our records right now, but I can still help you.');

    if (agent.validateHookEnabled) {
      const check = await talk.step('validate', () => api.validate(target, phone, record));
      if (check && !check.valid) {
        talk.agent(
          `I am sorry, I cannot book an appointment for you${check.reason ? `: ${check.reason}` : ''}. ${org} will contact you.`,
        );
        return talk.end(
          'caller_not_validated',
          `The caller asked for an appointment; the custom API's validation refused it${check.reason ? ` (${check.reason})` : ''}.`,
        );
      }
    }

    let offered: { doctor: { id: string; name: string }; start: string } | undefined;
    if (agent.slotsEnabled) {
      const doctor = doctorOf(agent);
      if (!doctor) {
        talk.failed('slots', "no doctor to ask for: set the agent's doctorId or sync its doctors");
      } else {
        const slots = await talk.step('slots', () => api.slots(target, doctor.id, dayIn(answeredAt, timezone)));
        if (slots?.[0]) {
          offered = { doctor, start: slots[0].start };
          talk.agent(`${doctor.name} has a free slot at ${offered.start}. Shall I book it for you?`);
          talk.caller('Yes, please.');
        } else if (slots) talk.agent(`${doctor.name} has no free slot today.`);
      }
    }

    if (agent.bookingEnabled && offered) {
      const slot = offered;
      const booked = await talk.step('appointments', () =>
        api.book(target, { doctorId: slot.doctor.id, start: slot.start, phone }),
      );
      if (booked?.confirmed) {
        talk.agent(
          `Your appointment with ${slot.doctor.name} at ${slot.start} is booked. Your reference is ${booked.appointmentId}.`,
        );
        return talk.end(
          'appointment_booked',
          `Appointment booked with ${slot.doctor.name} at ${slot.start} (appointment ${booked.appointmentId}).`,
          booked.appointmentId,
        );
      }
      if (booked) talk.failed('appointments', `the custom API did not confirm appointment ${booked.appointmentId}`);
    }
    talk.agent(
      offered && !agent.bookingEnabled
        ? `I have noted that you would like ${offered.start}; ${org} will confirm it with you.`
        : `I have noted your request; ${org} will call you back to confirm a time.`,
    );
    const why = !agent.slotsEnabled
      ? 'slots are not enabled for this agent'
      : !offered
        ? 'no slot was offered'
        : !agent.bookingEnabled
          ? 'booking is not enabled for this agent'
          : 'the booking failed';
    return talk.end('appointment_not_booked', `The caller asked for an appointment; none was booked: ${why}.`);
  }
}

/** The scope's doctor, else the first synced one (with its synced name when known). */
function doctorOf(agent: Agent): { id: string; name: string } | undefined {
  const id = agent.appointmentScope === 'doctor' ? agent.doctorId : agent.doctors?.[0]?.id;
  if (!id) return undefined;
  return { id, name: agent.doctors?.find((d) => d.id === id)?.name ?? `doctor ${id}` };
}

/** The calendar day of an instant in a time zone (`YYYY-MM-DD`); UTC when the zone is unknown. */
export function dayIn(at: Date, timezone: string | undefined): string {
  try {
    return new Intl.DateTimeFormat('en-CA', {
      timeZone: timezone ?? 'UTC',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
    }).format(at);
  } catch {
    return at.toISOString().slice(0, 10);
  }
}

function nameIn(record: Record<string, unknown> | undefined): string {
  const name = record?.name ?? record?.fullName ?? record?.firstName;
  return typeof name === 'string' && name.trim() ? `, ${name.trim().slice(0, 80)}` : '';
}

/** The conversation as it goes, and the custom-API steps it took. */
class Talk {
  private readonly turns: Turn[] = [];
  private readonly steps: Step[] = [];

  constructor(opening: string) {
    this.agent(opening);
  }

  agent(text: string): void {
    this.turns.push({ speaker: 'agent', text });
  }

  caller(text: string): void {
    this.turns.push({ speaker: 'caller', text });
  }

  failed(name: StepName, problem: string): void {
    this.steps.push({ name, ok: false, problem });
  }

  /** Runs one custom-API step; its failure is noted and answered as undefined. */
  async step<T>(name: StepName, run: () => Promise<T>): Promise<T | undefined> {
    try {
      const value = await run();
      this.steps.push({ name, ok: true });
      return value;
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      this.failed(name, err.message);
      return undefined;
    }
  }

  end(outcome: ConversationOutcome, summary: string, appointmentId?: string): Conversation {
    this.caller('Thank you, goodbye.');
    this.agent('Goodbye.');
    const failed = this.steps.filter((s) => !s.ok);
    const tail = failed.length ? ` Failed: ${failed.map((s) => `${s.name} (${s.problem})`).join('; ')}.` : '';
    return {
      turns: this.turns,
      summary: `${summary}${tail}`,
      outcome,
      steps: this.steps,
      ...(appointmentId && { appointmentId }),
    };
  }
}
