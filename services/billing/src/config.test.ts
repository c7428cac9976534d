import { rateCard, readConfig } from './config';

const base = { MONGO_URL: 'mongodb://127.0.0.1:1/', KAFKA_BROKERS: '127.0.0.1:1' };

describe('billing configuration', () => {
  it('takes the product rate card when no rate is set', () => {
    expect(rateCard(readConfig(base))).toEqual({
      outboundPerMinute: 2,
      inboundPerMinute: 1,
      knowledgePerThousandWords: 1,
    });
    expect(
      rateCard(readConfig({ ...base, RATE_OUTBOUND_PER_MINUTE: ' 3 ', RATE_INBOUND_PER_MINUTE: '0' })),
    ).toMatchObject({ outboundPerMinute: 3, inboundPerMinute: 0 });
  });

  it.each([
    ['negative', '-1', /RATE_INBOUND_PER_MINUTE: must be a whole number of credits ≥ 0, not "-1"/],
    ['fractional', '1.5', /RATE_INBOUND_PER_MINUTE: must be a whole number/],
    ['not a number', 'two', /RATE_INBOUND_PER_MINUTE: must be a whole number/],
    ['missing (set empty)', '', /RATE_INBOUND_PER_MINUTE: is missing \(empty\)/],
  ])('refuses to start on a %s rate, with one line naming it', (_what, value, message) => {
    let error: Error | undefined;
    try {
      readConfig({ ...base, RATE_INBOUND_PER_MINUTE: value });
    } catch (err) {
      error = err as Error;
    }
    expect(error?.message).toMatch(message);
    // One line for the rate (after the heading), not one per rule it breaks.
    expect(error!.message.split('\n').filter((l) => l.includes('RATE_INBOUND_PER_MINUTE'))).toHaveLength(1);
  });
});
