import type { Kafka } from 'kafkajs';
import { EventPublisher } from './publisher';

// kafkajs itself is not the subject: a stand-in producer shows when the publisher replaces it.
function fakeKafka(failures: unknown[]) {
  const producers: { sent: number }[] = [];
  const kafka = {
    producer: () => {
      const p = { sent: 0 };
      producers.push(p);
      return {
        connect: async () => undefined,
        disconnect: async () => undefined,
        sendBatch: async () => {
          const failure = failures.shift();
          // eslint-disable-next-line @typescript-eslint/only-throw-error -- the fake throws whatever the test scripted, Kafka's error shapes included
          if (failure) throw failure;
          p.sent++;
        },
      };
    },
  } as unknown as Kafka;
  return { kafka, producers };
}

const record = { eventId: 'e1', topic: 't', key: 'k', type: 'T', payload: new Uint8Array([1]) };
const wrapped = (type: string) => {
  const cause = Object.assign(new Error(type), { name: 'KafkaJSProtocolError', type, retriable: false });
  return Object.assign(new Error(type), { name: 'KafkaJSNumberOfRetriesExceeded', cause, originalError: cause });
};

describe('event publisher', () => {
  it('replaces its producer when the broker says its sequence state is lost, and sends on the new one', async () => {
    const { kafka, producers } = fakeKafka([wrapped('OUT_OF_ORDER_SEQUENCE_NUMBER')]);
    const publisher = new EventPublisher(kafka);
    await expect(publisher.send([record])).rejects.toThrow('OUT_OF_ORDER_SEQUENCE_NUMBER');
    await publisher.send([record]);
    expect(producers.map((p) => p.sent)).toEqual([0, 1]);
  });

  it('keeps its producer through other failures (Kafka away)', async () => {
    const lost = Object.assign(new Error('ECONNREFUSED'), { name: 'KafkaJSConnectionError', retriable: true });
    const { kafka, producers } = fakeKafka([lost]);
    const publisher = new EventPublisher(kafka);
    await expect(publisher.send([record])).rejects.toThrow('ECONNREFUSED');
    await publisher.send([record]);
    expect(producers.map((p) => p.sent)).toEqual([1]);
  });
});
