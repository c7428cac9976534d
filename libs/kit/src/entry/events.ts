/** Events: streams and groups, announcing a write through the outbox, publishing, subscribing, Kafka clients. */
export * from '../events/stream';
export * from '../events/kafka';
export * from '../events/publisher';
export * from '../events/subscriber';
export * from '../events/announce';
export * from '../events/outbox';
export * from '../events/start';
export { fixKafkajsRequestQueueTimer } from '../events/kafkajs-timer-fix';
