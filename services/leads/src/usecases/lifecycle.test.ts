import { scopeOfRecord } from '@voiceapi/kit/grpc';
import type { Contact, ContactStatus } from '../domain/contact';
import type { ContactStore } from '../store/contact-store';
import { ContactLifecycle } from './lifecycle';
import type { LeadEvent, LeadEvents } from './ports';

describe('ContactLifecycle.announceAgain (decision 0150)', () => {
  const scope = scopeOfRecord('t-1');
  const at = new Date('2026-11-30T02:00:00.000Z');
  const announced: LeadEvent[][] = [];
  const events: LeadEvents = {
    make: (event) => ({ event }),
    announce: async (made, write) => {
      announced.push(made.map((m) => m.event));
      return write();
    },
  };
  // Nobody is asked whether the tenant reads its changes: a repeat is rare, and webhooks drops what nobody reads.
  const readers = { wanted: () => Promise.reject(new Error('not asked')) };
  const lifecycle = new ContactLifecycle({} as ContactStore, events, readers, () => at);
  const contact = (status: ContactStatus, lastMove?: Contact['lastMove']): Contact => ({
    id: 'c-1',
    campaignId: 'cmp-1',
    phone: '+14155550100',
    channels: ['call'],
    status,
    attempts: 1,
    dispatches: 1,
    sandbox: false,
    createdAt: at,
    updatedAt: at,
    ...(lastMove && { lastMove }),
  });
  beforeEach(() => announced.splice(0));

  it('announces the last move again as it was first announced: its statuses, time and end reason', async () => {
    await lifecycle.announceAgain(
      scope,
      contact('failed', { from: 'in_call', to: 'failed', at, endReason: 'max_attempts' }),
      ['dialing', 'in_call'],
      ['completed', 'failed'],
    );
    expect(announced).toEqual([
      [
        expect.objectContaining({
          kind: 'statusChanged',
          tenantId: 't-1',
          before: expect.objectContaining({ id: 'c-1', campaignId: 'cmp-1', status: 'in_call', sandbox: false }),
          status: 'failed',
          at,
          endReason: 'max_attempts',
          atOnce: true,
        }),
      ],
    ]);
  });

  it('announces nothing but the repeated cause’s own move', async () => {
    // No move kept (a contact moved only by a release before 0150).
    await lifecycle.announceAgain(scope, contact('in_call'), ['dialing']);
    // A move from elsewhere (the contact was cancelled, not answered).
    await lifecycle.announceAgain(scope, contact('cancelled', { from: 'queued', to: 'cancelled', at }), ['dialing']);
    // A move into another status than the cause's (the next call's answer, seen by the last call's end).
    await lifecycle.announceAgain(
      scope,
      contact('in_call', { from: 'dialing', to: 'in_call', at }),
      ['dialing', 'in_call'],
      ['completed'],
    );
    // A move an older release made since: the contact's status is not where the kept move went.
    await lifecycle.announceAgain(
      scope,
      contact('completed', { from: 'in_call', to: 'scheduled', at }),
      ['dialing', 'in_call'],
      ['completed', 'scheduled'],
    );
    expect(announced).toEqual([]);
  });
});
