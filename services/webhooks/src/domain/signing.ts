import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';

/**
 * Standard Webhooks signing, by the specification's own library: `webhook-signature` is
 * `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<body>">`, one entry per secret in force, separated
 * by spaces, so a receiver verifying with either secret of a rotation accepts the message.
 */

/** A new endpoint secret: `whsec_` + 32 random bytes in base64 (the format the libraries read). */
export const newSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/** The three headers for one attempt; `secrets` newest first. */
export function signedHeaders(messageId: string, at: Date, body: string, secrets: readonly string[]): SignedHeaders {
  if (secrets.length === 0) throw new Error('an endpoint without a secret cannot be signed for');
  // The timestamp is whole seconds; the library signs the floor of the date it is given.
  const timestamp = new Date(Math.floor(at.getTime() / 1000) * 1000);
  return {
    'webhook-id': messageId,
    'webhook-timestamp': String(timestamp.getTime() / 1000),
    'webhook-signature': secrets.map((s) => new Webhook(s).sign(messageId, timestamp, body)).join(' '),
  };
}
