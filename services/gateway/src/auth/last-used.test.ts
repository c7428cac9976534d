import { LastUsedRecorder } from './last-used';

describe('LastUsedRecorder', () => {
  it('writes the first use at once and then at most once per resolution window', () => {
    const write = jest.fn(async () => undefined);
    const rec = new LastUsedRecorder(write, 60_000, () => undefined);
    rec.used('k1', 1_000);
    rec.used('k1', 2_000);
    rec.used('k1', 60_999);
    expect(write).toHaveBeenCalledTimes(1);
    rec.used('k1', 61_000);
    expect(write).toHaveBeenCalledTimes(2);
    rec.used('k2', 61_000);
    expect(write).toHaveBeenCalledTimes(3);
  });

  it('retries on the next use after a failed write', async () => {
    const write = jest.fn().mockRejectedValueOnce(new Error('down')).mockResolvedValue(undefined);
    const onError = jest.fn();
    const rec = new LastUsedRecorder(write, 60_000, onError);
    rec.used('k1', 1_000);
    await new Promise((r) => setImmediate(r));
    expect(onError).toHaveBeenCalledTimes(1);
    rec.used('k1', 2_000);
    expect(write).toHaveBeenCalledTimes(2);
  });
});
