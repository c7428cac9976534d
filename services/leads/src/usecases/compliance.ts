import type { TenantScope } from '@voiceapi/kit/grpc';
import { windowDecision, type WindowSetting } from '../domain/calling-window';
import type { WindowCheck } from '../domain/contact';
import type { DoNotCallStore } from '../store/do-not-call-store';

export interface CallChecks {
  doNotCall: { tenant: boolean; platform: boolean };
  window: WindowCheck;
}

/**
 * The checks of the call channel that can change after ingest (both do-not-call lists, the
 * calling window in the called party's zones): run at ingest, when a scheduled dial is
 * dispatched, and when telephony claims the dial.
 */
export class ComplianceChecks {
  constructor(private readonly dnc: DoNotCallStore) {}

  async run(
    scope: TenantScope,
    phone: string,
    window: WindowSetting,
    zones: { timeZones: string[]; timeZoneSource: 'number' | 'fallback' },
    now: Date,
  ): Promise<CallChecks> {
    const doNotCall = await this.dnc.check(scope, phone);
    return { doNotCall, window: windowCheck(window, zones, now) };
  }
}

export function windowCheck(
  window: WindowSetting,
  zones: { timeZones: string[]; timeZoneSource: 'number' | 'fallback' },
  now: Date,
): WindowCheck {
  const d = windowDecision(window, zones.timeZones, now);
  return {
    window,
    timeZones: zones.timeZones,
    timeZoneSource: zones.timeZoneSource,
    open: d.open,
    ...(d.nextOpenAt && { nextOpenAt: d.nextOpenAt }),
  };
}

/** Which list holds the number, for the error's details. */
export function doNotCallDetails(d: { tenant: boolean; platform: boolean }): { path: string; message: string }[] {
  return [
    ...(d.tenant ? [{ path: 'phone', message: "on the tenant's do-not-call list" }] : []),
    ...(d.platform ? [{ path: 'phone', message: "on the platform's do-not-call list" }] : []),
  ];
}
