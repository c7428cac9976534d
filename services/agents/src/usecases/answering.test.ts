import { SecretBox } from '@voiceapi/kit/crypto';
import { requireTenant } from '@voiceapi/kit/grpc';
import type { CustomApi, CustomApiTarget } from '../custom-api/custom-api';
import type { Agent } from '../domain/agent';
import { agentsReasons } from '../reasons';
import type { AgentStore } from '../store/agent-store';
import { Answering, dayIn } from './answering';
import { secretBinding } from './custom-api-target';

// The conversation's rules on domain objects, with the custom API and the store as fakes of their
// ports (the real ones run in test/e2e/inbound-calls.e2e.test.ts).

const scope = requireTenant({ tenantId: 't1', keyMode: 'live' });
const secrets = new SecretBox('k'.repeat(40), 'agents.custom-api-secret');
const AT = new Date('2026-11-25T03:30:00Z'); // still the 24th in New York

function agent(over: Partial<Agent> = {}): Agent {
  return {
    id: 'a1',
    name: 'Front desk',
    phoneNumber: '+14155550100',
    phoneNumberId: 'n1',
    status: 'active',
    scriptStatus: 'ready',
    selectedKnowledgebases: [],
    appointmentScope: 'global',
    customApiSecretSet: true,
    customApiTimeoutMs: 500,
    customApiBaseUrl: 'https://clinic.example/api',
    validateHookEnabled: true,
    slotsEnabled: true,
    bookingEnabled: true,
    doctors: [
      { id: 'd1', name: 'Dr. Rivera' },
      { id: 'd2', name: 'Dr. Okafor' },
    ],
    script: { text: '…', opening: 'Sunrise Clinic, how can I help?', sources: [], generator: 'local', generatedAt: AT },
    sandbox: false,
    createdAt: AT,
    updatedAt: AT,
    ...over,
  };
}

/** The custom API as a fake: each step answers, or fails with the mapped error the real one raises. */
function fakeApi(
  fail: Partial<Record<'crm' | 'validate' | 'slots' | 'book', string>> = {},
  answers: { valid?: boolean; slots?: string[] } = {},
) {
  const calls: string[] = [];
  const targets: CustomApiTarget[] = [];
  const step = async <T>(name: keyof typeof fail, target: CustomApiTarget, what: string, value: T): Promise<T> => {
    calls.push(what);
    targets.push(target);
    if (fail[name]) throw agentsReasons.error('custom_api_error', fail[name]);
    return value;
  };
  const api = {
    crmLookup: (t: CustomApiTarget, phone: string) =>
      step('crm', t, `lookup ${phone}`, { found: true, record: { name: 'Ada Lovelace' } }),
    validate: (t: CustomApiTarget, phone: string) =>
      step('validate', t, `validate ${phone}`, {
        valid: answers.valid ?? true,
        ...(answers.valid === false && { reason: 'the insurance has lapsed' }),
      }),
    slots: (t: CustomApiTarget, doctorId: string, date: string) =>
      step(
        'slots',
        t,
        `slots ${doctorId} ${date}`,
        (answers.slots ?? ['2026-11-24T15:30:00-05:00']).map((start) => ({ start })),
      ),
    book: (t: CustomApiTarget, b: { doctorId: string; start: string; phone: string }) =>
      step('book', t, `book ${b.doctorId} ${b.start} ${b.phone}`, { appointmentId: 'apt-1', confirmed: true }),
  } as unknown as CustomApi;
  return { api, calls, targets };
}

function answering(a: Agent | Agent[], api: CustomApi, timezone = 'America/New_York') {
  const agents = Array.isArray(a) ? a : [a];
  const store = {
    getWithSealedSecret: async (_scope: unknown, id: string) => {
      const found = agents.find((x) => x.id === id);
      return found
        ? {
            agent: found,
            sealedSecret: secrets.seal('bearer-1', secretBinding({ tenantId: 't1', mode: 'live' } as never, found.id)),
          }
        : null;
    },
    onNumber: async () => agents,
  } as unknown as AgentStore;
  const companies = { get: async () => ({ id: 'c1', name: 'Sunrise Clinic', timezone }), latest: async () => null };
  return new Answering({ agents: store, companies, customApi: api, secrets });
}

describe('an inbound call answered by an agent', () => {
  it('opens with its script, then looks up, validates, offers the first synced doctor’s slot today in the company’s zone, and books it', async () => {
    const { api, calls, targets } = fakeApi();
    const c = await answering(agent({ companyId: 'c1' }), api).holdConversation(scope, 'a1', '+14155550199', AT);
    expect(calls).toEqual([
      'lookup +14155550199',
      'validate +14155550199',
      'slots d1 2026-11-24',
      'book d1 2026-11-24T15:30:00-05:00 +14155550199',
    ]);
    expect(targets.every((t) => t.secret === 'bearer-1' && t.timeoutMs === 500)).toBe(true);
    expect(c.turns[0]).toEqual({ speaker: 'agent', text: 'Sunrise Clinic, how can I help?' });
    expect(c).toMatchObject({
      outcome: 'appointment_booked',
      appointmentId: 'apt-1',
      summary: 'Appointment booked with Dr. Rivera at 2026-11-24T15:30:00-05:00 (appointment apt-1).',
    });
  });

  it('asks the scope’s doctor when the agent has one', async () => {
    const { api, calls } = fakeApi();
    await answering(agent({ appointmentScope: 'doctor', branchId: 'b1', doctorId: 'd2' }), api, 'UTC').holdConversation(
      scope,
      'a1',
      '+14155550199',
      AT,
    );
    expect(calls).toContain('slots d2 2026-11-25');
  });

  it('goes on without a failing step and names every failed one in the summary', async () => {
    const { api, calls } = fakeApi({
      crm: 'no complete answer within 500 ms',
      slots: 'the custom API answered 500 to GET /slots',
    });
    const c = await answering(agent(), api).holdConversation(scope, 'a1', '+14155550199', AT);
    expect(calls.map((x) => x.split(' ')[0])).toEqual(['lookup', 'validate', 'slots']);
    expect(c).toMatchObject({
      outcome: 'appointment_not_booked',
      summary:
        'The caller asked for an appointment; none was booked: no slot was offered. Failed: crm_lookup (no complete answer within 500 ms); slots (the custom API answered 500 to GET /slots).',
    });
  });

  it('ends the booking when validation refuses the caller', async () => {
    const { api, calls } = fakeApi({}, { valid: false });
    const c = await answering(agent(), api).holdConversation(scope, 'a1', '+14155550199', AT);
    expect(calls).toHaveLength(2);
    expect(c).toMatchObject({
      outcome: 'caller_not_validated',
      summary:
        "The caller asked for an appointment; the custom API's validation refused it (the insurance has lapsed).",
    });
  });

  it('with no doctor to ask, names the missing doctor; without a custom API, takes a message', async () => {
    const { api } = fakeApi();
    const noDoctor = await answering(agent({ doctors: [] }), api).holdConversation(scope, 'a1', '+14155550199', AT);
    expect(noDoctor.summary).toMatch(/Failed: slots \(no doctor to ask for/);
    const { api: unused, calls } = fakeApi();
    const plain = await answering(agent({ customApiBaseUrl: undefined }), unused).holdConversation(
      scope,
      'a1',
      '+14155550199',
      AT,
    );
    expect(calls).toEqual([]);
    expect(plain).toMatchObject({ outcome: 'enquiry_answered' });
  });

  it('is answered by the active agent activated last; none active: default answering', async () => {
    const { api } = fakeApi();
    const older = agent({ id: 'a1', activatedAt: new Date(AT.getTime() - 60_000) });
    const newer = agent({ id: 'a2', name: 'Night desk', activatedAt: AT });
    expect(
      await answering([older, newer, agent({ id: 'a3', status: 'inactive' })], api).answeringAgent(scope, 'n1'),
    ).toEqual({ id: 'a2', name: 'Night desk' });
    expect(await answering([agent({ status: 'inactive' })], api).answeringAgent(scope, 'n1')).toBeNull();
  });

  it('reads the calendar day in the company’s zone, UTC when the zone is unknown', () => {
    expect(dayIn(AT, 'America/New_York')).toBe('2026-11-24');
    expect(dayIn(AT, 'Asia/Kolkata')).toBe('2026-11-25');
    expect(dayIn(AT, undefined)).toBe('2026-11-25');
    expect(dayIn(AT, 'Not/AZone')).toBe('2026-11-25');
  });
});
