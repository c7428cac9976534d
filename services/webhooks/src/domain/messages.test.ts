import { occurredAtOf, webhookMessage } from './messages';

describe('occurredAtOf', () => {
  it("reads the event's time from a message body as webhookMessage writes it", () => {
    const at = new Date('2026-11-25T12:00:01.250Z');
    expect(
      occurredAtOf(
        webhookMessage('e-1', 't-1', 'credits.usage', at, { amount: 3, note: '"timestamp":"1999-01-01T00:00:00Z"' })
          .body,
      ),
    ).toEqual(at);
  });

  it('answers undefined for a body without a readable time', () => {
    expect(occurredAtOf('{"type":"credits.usage"}')).toBeUndefined();
    expect(occurredAtOf('{"type":"credits.usage","timestamp":"soon","data":{}}')).toBeUndefined();
  });
});
