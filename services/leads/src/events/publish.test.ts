import { context, propagation, trace, TraceFlags, type Context } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import type { Announcer, EventRecord } from '@voiceapi/kit/events';
import type { Campaign, Contact } from '../domain/contact';
import { leadEvents } from './publish';

// An event is made where its cause happens: a batch that announces it later, from another
// request's context (AcceptWriter's group commit), still sends it with its own trace.

const traced = (traceId: string): Context =>
  trace.setSpanContext(context.active(), { traceId, spanId: '1'.repeat(16), traceFlags: TraceFlags.SAMPLED });

describe('leadEvents', () => {
  const manager = new AsyncLocalStorageContextManager().enable();
  beforeAll(() => {
    context.setGlobalContextManager(manager);
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  });
  afterAll(() => {
    context.disable();
    propagation.disable();
  });

  it("sends each event with the trace of the context it was made in, not the announcer's", async () => {
    const sent: EventRecord[] = [];
    const outbox: Announcer = {
      announce: async (events, write) => {
        sent.push(...events);
        return write();
      },
    };
    const events = leadEvents(outbox);
    const contact = { id: 'c1', phone: '+14155550100', attempts: 0 } as Contact;
    const campaign = { id: 'k1', maxCallSeconds: 60 } as Campaign;
    const lead = (n: number) =>
      events.make({
        kind: 'dialRequested',
        tenantId: 't1',
        contact: { ...contact, id: `c${n}` },
        campaign,
        dispatch: 1,
        at: new Date(),
      });
    const made = [
      context.with(traced('a'.repeat(32)), () => lead(1)),
      context.with(traced('b'.repeat(32)), () => lead(2)),
    ];
    await context.with(traced('c'.repeat(32)), () =>
      events.announce(made, async () => true, { readBack: { applied: 'always', why: 'a test' } }),
    );
    expect(sent.map((r) => r.traceHeaders?.traceparent?.split('-')[1])).toEqual(['a'.repeat(32), 'b'.repeat(32)]);
    expect(sent.map((r) => r.eventId)).toEqual(['dial:c1:1', 'dial:c2:1']);
  });

  it('refuses an event it did not make', () => {
    const events = leadEvents({ announce: (_e, write) => write() });
    expect(() =>
      events.announce(
        [{ event: { kind: 'contactDeleted', tenantId: 't', contactId: 'c', at: new Date() } }],
        async () => 1,
        { readBack: { applied: 'always', why: 'a test' } },
      ),
    ).toThrow(/not made/);
  });
});
