import { randomBytes } from 'node:crypto';
import { requireTenant } from '@voiceapi/kit/grpc';
import mongoose, { type Connection } from 'mongoose';
import { ApiKeyStore, type NewApiKey } from '../src/store/api-keys';

// API keys against the real MongoDB-compatible server: found by hash through an _id lookup.
describe('ApiKeyStore', () => {
  let conn: Connection;
  let store: ApiKeyStore;
  const scope = requireTenant({ tenantId: 'tenant-a', keyMode: 'live' });
  const key = (hash: string): NewApiKey => ({
    name: 'k',
    mode: 'live',
    scopes: ['calls:read'],
    status: 'active',
    keyHash: hash,
    keyHint: 'sk_live_…abcd',
  });

  beforeAll(async () => {
    conn = await mongoose
      .createConnection(process.env.MONGO_URL!, { dbName: `gw_keys_${randomBytes(4).toString('hex')}` })
      .asPromise();
    store = new ApiKeyStore(conn);
  });
  afterAll(() => conn.close());

  it('finds a key by the hash of its secret, and nothing for an unknown hash', async () => {
    const stored = await store.insert(scope, key('hash-1'));
    expect((await store.findByHash('hash-1'))?._id.toString()).toBe(stored._id.toString());
    expect(await store.findByHash('hash-unknown')).toBeNull();
  });
});
