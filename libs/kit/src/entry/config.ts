/** Settings from the environment, checked at start (zod schemas and the kit's setting types). */
export * from '../config';
