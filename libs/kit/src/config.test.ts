import { z } from 'zod';
import { commonEnv, ConfigError, grpcAddress, loadConfig } from './config';

const schema = z.object({ ...commonEnv, PORT: z.coerce.number().int().default(8080) });

describe('loadConfig', () => {
  it('parses, applies defaults and freezes', () => {
    const cfg = loadConfig(schema, { MONGO_URL: 'mongodb://127.0.0.1:27017', KAFKA_BROKERS: 'a:9092, b:9092' });
    expect(cfg.PORT).toBe(8080);
    expect(cfg.KAFKA_BROKERS).toEqual(['a:9092', 'b:9092']);
    expect(cfg.LOG_LEVEL).toBe('info');
    expect(Object.isFrozen(cfg)).toBe(true);
  });

  it('fails fast naming every bad variable', () => {
    expect(() => loadConfig(schema, { MONGO_URL: 'postgres://x', PORT: 'eighty' })).toThrow(ConfigError);
    try {
      loadConfig(schema, { MONGO_URL: 'postgres://x', PORT: 'eighty' });
    } catch (err) {
      const message = (err as Error).message;
      expect(message).toMatch(/MONGO_URL/);
      expect(message).toMatch(/KAFKA_BROKERS/);
      expect(message).toMatch(/PORT/);
    }
  });
});

describe('grpcAddress', () => {
  it('takes one name or a fixed list of backends', () => {
    for (const ok of [
      'billing:50062',
      'billing.voiceapi.svc.cluster.local:50062',
      'dns:///billing:50062',
      'ipv4:127.0.0.1:50062',
      'ipv4:127.0.0.1:50062,127.0.0.1:50072',
    ]) {
      expect(grpcAddress.safeParse(ok).success).toBe(true);
    }
    for (const bad of [
      'billing',
      'http://billing:50062',
      'ipv4:billing:50062',
      'ipv4:127.0.0.1:50062,',
      'billing:50062,billing:50072',
    ]) {
      expect(grpcAddress.safeParse(bad).success).toBe(false);
    }
  });
});
