/**
 * Event streams named by their contract: each topic is derived from its envelope's proto name, never written by hand:
 *   voiceapi.events.v1.GatewayControlEvent  →  topic `gateway.control.v1`, dead letters `gateway.control.v1.dlq`
 */

/** What ts-proto generates for a message (with `outputTypeAnnotations=static-only`). */
export interface MessageCodec<T> {
  readonly $type: string;
  encode(message: T): { finish(): Uint8Array };
  decode(input: Uint8Array): T;
}

export interface Stream<T = unknown> {
  readonly envelope: MessageCodec<T>;
  /** The envelope's full proto name, sent in the `event-type` header. */
  readonly type: string;
  readonly topic: string;
  readonly deadLetterTopic: string;
}

const ENVELOPE_NAME = /^(?<org>[a-z][a-z0-9]*)\.events\.(?<version>v\d+)\.(?<name>[A-Z][A-Za-z0-9]*)Event$/;
const cache = new WeakMap<object, Stream>();

export function streamTopics(envelope: { readonly $type: string }): { topic: string; deadLetterTopic: string } {
  const m = ENVELOPE_NAME.exec(envelope.$type);
  if (!m?.groups) {
    throw new Error(`${envelope.$type} is not an event envelope (<org>.events.<version>.<Name>Event)`);
  }
  const words = m.groups.name!.replace(/([a-z0-9])([A-Z])/g, '$1.$2').toLowerCase();
  const topic = `${words}.${m.groups.version}`;
  return { topic, deadLetterTopic: `${topic}.dlq` };
}

/** The stream an envelope stands for. Throws on a message that is not an event envelope. */
export function streamOf<T>(envelope: MessageCodec<T>): Stream<T> {
  const known = cache.get(envelope);
  if (known) return known as Stream<T>;
  const stream: Stream<T> = { envelope, type: envelope.$type, ...streamTopics(envelope) };
  cache.set(envelope, stream);
  return stream;
}

const NAME_PART = /^[a-z][a-z0-9-]*$/;

function checkPart(what: string, value: string): string {
  if (!NAME_PART.test(value)) throw new Error(`${what} "${value}" must be lower-case letters, digits and dashes`);
  return value;
}

/** A group shared by a service's replicas (each event handled once), e.g. `billing.charge-calls`. */
export function consumerGroup(service: string, purpose: string): string {
  return `${checkPart('service', service)}.${checkPart('purpose', purpose)}`;
}

const BROADCAST = 'broadcast';

/**
 * A group of one replica, so every replica hears every event: `<service>.<purpose>.broadcast.<instance>`, so dead
 * replicas' groups can be told apart and removed.
 */
export function broadcastGroup(service: string, purpose: string, instanceId: string): string {
  const instance = instanceId.toLowerCase().replace(/[^a-z0-9-]/g, '-');
  return `${consumerGroup(service, purpose)}.${BROADCAST}.${instance}`;
}

/** A group as metrics name it: a broadcast group without its instance, so names stay a fixed set across restarts. */
export const groupLabel = (group: string): string => {
  const at = group.indexOf(`.${BROADCAST}.`);
  return at < 0 ? group : group.slice(0, at + BROADCAST.length + 1);
};

/** The prefix every broadcast group of one service and purpose shares. */
export const broadcastGroupPrefix = (service: string, purpose: string): string =>
  `${consumerGroup(service, purpose)}.${BROADCAST}.`;
