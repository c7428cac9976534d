import type { Kafka } from 'kafkajs';
import { LagReader, lagOf } from './lag';
import { broadcastGroup, consumerGroup, groupLabel } from './stream';

describe('lagOf', () => {
  const ends = [
    { partition: 0, low: '0', high: '100' },
    { partition: 1, low: '40', high: '50' },
    { partition: 2, low: '0', high: '7' },
  ];

  it('sums the high watermark less the committed offset over every partition of the topic', () => {
    const committed = [
      { partition: 0, offset: '90' },
      { partition: 1, offset: '50' },
      { partition: 2, offset: '0' },
    ];
    expect(lagOf(committed, ends, true)).toBe(17);
    expect(lagOf(committed, [], true)).toBe(0);
  });

  it('counts a partition with nothing committed from its first message, or from its end for a group that starts there', () => {
    const committed = [
      { partition: 0, offset: '-1' },
      { partition: 1, offset: '-1' },
    ];
    // Partition 2 has no committed offset at all (absent from the answer): counted like -1.
    expect(lagOf(committed, ends, true)).toBe(117);
    expect(lagOf(committed, ends, false)).toBe(0);
  });

  it('never goes below zero (a committed offset read after a newer high watermark)', () => {
    expect(lagOf([{ partition: 2, offset: '9' }], [ends[2]!], true)).toBe(0);
  });
});

describe('LagReader', () => {
  const fakeKafka = () => {
    const calls: string[] = [];
    const admin = {
      connect: () => (calls.push('connect'), Promise.resolve()),
      disconnect: () => (calls.push('disconnect'), Promise.resolve()),
      fetchOffsets: ({ groupId, topics }: { groupId: string; topics: string[] }) => {
        calls.push(`offsets ${groupId} ${topics.join(',')}`);
        return Promise.resolve(
          topics.map((topic) => ({ topic, partitions: [0, 1, 2].map((partition) => ({ partition, offset: '5' })) })),
        );
      },
      fetchTopicOffsets: (topic: string) => {
        calls.push(`ends ${topic}`);
        return Promise.resolve([0, 1, 2].map((partition) => ({ partition, offset: '8', low: '0', high: '8' })));
      },
    };
    return { kafka: { admin: () => admin } as unknown as Kafka, calls };
  };

  it('opens one admin client per Kafka client at the first read, reads every partition of the topics asked, and closes it with its last user', async () => {
    const { kafka, calls } = fakeKafka();
    const reader = LagReader.of(kafka);
    expect(LagReader.of(kafka)).toBe(reader);
    reader.use();
    reader.use();
    expect(calls).toEqual([]); // nothing read, nothing opened
    expect([...(await reader.lag('billing.call-charging', [], true))]).toEqual([]);
    expect(calls).toEqual([]); // no topic, nothing asked
    const lag = await reader.lag('billing.call-charging', ['telephony.call.v1', 'leads.v1'], true);
    // Three partitions each, committed at 5 of 8: 9 a topic, whoever holds them.
    expect([...lag]).toEqual([
      ['telephony.call.v1', 9],
      ['leads.v1', 9],
    ]);
    expect(calls).toEqual([
      'connect',
      'offsets billing.call-charging telephony.call.v1,leads.v1',
      'ends telephony.call.v1',
      'ends leads.v1',
    ]);
    await reader.release();
    expect(calls).not.toContain('disconnect');
    await reader.release();
    expect(calls.at(-1)).toBe('disconnect');
    await expect(reader.lag('billing.call-charging', ['telephony.call.v1'], true)).rejects.toThrow(/any more/);
  });
});

describe('groupLabel', () => {
  it('names a shared group by its id and a broadcast group without its replica', () => {
    expect(groupLabel(consumerGroup('billing', 'call-charging'))).toBe('billing.call-charging');
    expect(groupLabel(broadcastGroup('leads', 'credit-view', 'leads-7d9f-abc'))).toBe('leads.credit-view.broadcast');
  });
});
