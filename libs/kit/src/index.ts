// Everything the kit offers, in one list. Code outside the kit imports by job instead, `@voiceapi/kit/<job>`
// (package.json "exports", one per file of src/entry/), and test/conformance/layout.test.ts keeps it so.
export * from './entry/service';
export * from './entry/config';
export * from './entry/errors';
export * from './entry/grpc';
export * from './entry/mongo';
export * from './entry/events';
export * from './entry/objects';
export * from './entry/http';
export * from './entry/work';
export * from './entry/metrics';
export * from './entry/crypto';
