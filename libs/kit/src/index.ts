// Everything the kit offers, for code that needs many jobs at once. New code imports by job instead:
// `@voiceapi/kit/<job>` (package.json "exports"), one entry point per file of src/entry/.
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
