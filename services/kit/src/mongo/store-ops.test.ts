import { EventEmitter } from 'node:events';
import type { mongo } from 'mongoose';
import type { Logger } from '../logger';
import { logSlowCommands } from './store-ops';

describe('logSlowCommands', () => {
  it('logs a command slower than the threshold with its collection, not a fast one nor a waiting getMore', () => {
    const client = new EventEmitter();
    const warn = jest.fn();
    logSlowCommands(client as unknown as mongo.MongoClient, { warn } as unknown as Logger, 1_000);
    const start = (requestId: number, commandName: string, command: Record<string, unknown>) => client.emit('commandStarted', { requestId, commandName, command, databaseName: 'leads' });
    start(1, 'insert', { insert: 'contacts' });
    start(2, 'find', { find: 'campaigns' });
    start(3, 'getMore', { getMore: 1, collection: 'outbox' });
    start(4, 'update', { update: 'contacts' });
    client.emit('commandSucceeded', { requestId: 1, commandName: 'insert', duration: 4_200 });
    client.emit('commandSucceeded', { requestId: 2, commandName: 'find', duration: 12 });
    client.emit('commandSucceeded', { requestId: 3, commandName: 'getMore', duration: 30_000 });
    client.emit('commandFailed', { requestId: 4, commandName: 'update', duration: 1_500, failure: new Error('cut') });
    expect(warn.mock.calls).toEqual([
      [{ command: 'insert', collection: 'contacts', ms: 4_200, failed: false }, 'a store command was slow'],
      [{ command: 'update', collection: 'contacts', ms: 1_500, failed: true }, 'a store command was slow'],
    ]);
  });
});
