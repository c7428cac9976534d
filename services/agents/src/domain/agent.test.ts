import { DomainError } from '@voiceapi/kit/errors';
import { checkOneScopePerNumber, checkScope, checkTimeout, nextStatus } from './agent';

const reason = (f: () => unknown) => {
  try {
    f();
  } catch (err) {
    return err instanceof DomainError ? err.reasonCode : String(err);
  }
  return 'none';
};

describe('inbound agent rules', () => {
  it('follows the spec’s state table: activation needs a ready script, deactivation works from any state', () => {
    expect(nextStatus({ scriptStatus: 'ready' }, true)).toBe('active');
    for (const s of ['none', 'generating', 'error'] as const) {
      expect(reason(() => nextStatus({ scriptStatus: s }, true))).toBe('script_not_ready');
      expect(nextStatus({ scriptStatus: s }, false)).toBe('inactive');
    }
    expect(nextStatus({ scriptStatus: 'ready' }, false)).toBe('inactive');
  });

  it('asks hospital and doctor scopes for their fields', () => {
    expect(reason(() => checkScope('global', undefined, undefined))).toBe('none');
    expect(reason(() => checkScope('hospital', undefined, undefined))).toBe('validation_error');
    expect(reason(() => checkScope('hospital', 'b1', undefined))).toBe('none');
    expect(reason(() => checkScope('doctor', 'b1', undefined))).toBe('validation_error');
    expect(reason(() => checkScope('doctor', undefined, 'd1'))).toBe('validation_error');
    expect(reason(() => checkScope('doctor', 'b1', 'd1'))).toBe('none');
  });

  it('keeps one scope per number, ignoring the agent itself', () => {
    const others = [{ id: 'a', appointmentScope: 'hospital' as const }];
    expect(reason(() => checkOneScopePerNumber(others, undefined, 'hospital'))).toBe('none');
    expect(reason(() => checkOneScopePerNumber(others, undefined, 'global'))).toBe('phone_scope_conflict');
    expect(reason(() => checkOneScopePerNumber(others, 'a', 'global'))).toBe('none');
  });

  it('bounds the custom API timeout to 1–15000 ms', () => {
    expect(reason(() => checkTimeout(undefined))).toBe('none');
    expect(reason(() => checkTimeout(15_000))).toBe('none');
    for (const bad of [0, 15_001, 2.5, -1]) expect(reason(() => checkTimeout(bad))).toBe('validation_error');
  });
});
