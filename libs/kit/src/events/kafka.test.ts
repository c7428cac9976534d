import { logLevel } from 'kafkajs';
import { kafkaLogLevels } from './kafka';

describe("kafkajs's log lines", () => {
  it('log a consumer crash while its group coordinator loads, and its restart, at info; other crashes keep their level', () => {
    const levelOf = kafkaLogLevels();
    const loading =
      "Crash: KafkaJSProtocolError: The coordinator is loading and hence can't process requests for this group";
    expect(levelOf(logLevel.ERROR, loading, { groupId: 'g' })).toBe('info');
    expect(levelOf(logLevel.ERROR, 'Restarting the consumer in 200ms', { groupId: 'g' })).toBe('info');
    // The next restart of that group follows some other crash: it stays an error.
    expect(levelOf(logLevel.ERROR, 'Crash: KafkaJSNumberOfRetriesExceeded: broker away', { groupId: 'g' })).toBe(
      'error',
    );
    expect(levelOf(logLevel.ERROR, 'Restarting the consumer in 200ms', { groupId: 'g' })).toBe('error');
    expect(
      levelOf(logLevel.ERROR, 'Response JoinGroup(key: 11, version: 5)', {
        error: 'The group coordinator is not available',
      }),
    ).toBe('debug');
    expect(levelOf(logLevel.WARN, 'something else', {})).toBe('warn');
  });
});
