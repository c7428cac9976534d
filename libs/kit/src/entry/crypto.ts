/** Secrets at rest: the secret box. */
export * from '../crypto/secret-box';
