import { Webhook } from 'standardwebhooks';
import { webhookMessage, deliveryId } from './messages';
import { newSecret, signedHeaders } from './signing';

describe('signing', () => {
  const message = webhookMessage('billed:call-1', 't1', 'call.outbound.billed', new Date('2026-11-23T10:00:00Z'), {
    callId: 'call-1',
    creditsCharged: 4,
    sandbox: false,
  });

  it('makes whsec_ secrets the Standard Webhooks library reads', () => {
    const secret = newSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(() => new Webhook(secret)).not.toThrow();
    expect(newSecret()).not.toBe(secret);
  });

  it('signs so that the library’s own verifier accepts the message, and refuses a changed body', () => {
    const secret = newSecret();
    const headers = signedHeaders(message.id, new Date(), message.body, [secret]);
    expect(headers['webhook-id']).toBe(message.id);
    expect(headers['webhook-timestamp']).toMatch(/^\d{10}$/);
    expect(new Webhook(secret).verify(message.body, { ...headers })).toEqual(JSON.parse(message.body));
    expect(() => new Webhook(secret).verify(message.body.replace('4', '5'), { ...headers })).toThrow(/signature/);
    expect(() => new Webhook(newSecret()).verify(message.body, { ...headers })).toThrow(/signature/);
  });

  it('carries one signature per secret during a rotation: either secret verifies', () => {
    const [fresh, old] = [newSecret(), newSecret()];
    const headers = signedHeaders(message.id, new Date(), message.body, [fresh, old]);
    expect(headers['webhook-signature'].split(' ')).toHaveLength(2);
    for (const s of [fresh, old])
      expect(new Webhook(s).verify(message.body, { ...headers })).toEqual(JSON.parse(message.body));
  });

  it('gives the same platform event the same id and body, and each endpoint its own delivery id', () => {
    const again = webhookMessage('billed:call-1', 't1', 'call.outbound.billed', new Date('2026-11-23T10:00:00Z'), {
      callId: 'call-1',
      creditsCharged: 4,
      sandbox: false,
    });
    expect(again).toEqual(message);
    expect(message.id).toMatch(/^msg_[A-Za-z0-9_-]{27}$/);
    expect(JSON.parse(message.body)).toEqual({
      type: 'call.outbound.billed',
      timestamp: '2026-11-23T10:00:00.000Z',
      data: { callId: 'call-1', creditsCharged: 4, sandbox: false },
    });
    expect(webhookMessage('billed:call-2', 't1', 'call.outbound.billed', new Date(), {}).id).not.toBe(message.id);
    expect(deliveryId('ep_a', message.id)).not.toBe(deliveryId('ep_b', message.id));
    expect(deliveryId('ep_a', message.id)).toBe(deliveryId('ep_a', message.id));
  });
});
