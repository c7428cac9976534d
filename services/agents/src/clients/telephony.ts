import { nullIfNotFound } from '@voiceapi/kit/errors';
import { contextOf, type PromiseClient } from '@voiceapi/kit/grpc';
import type { voiceapi } from '@voiceapi/proto';
import type { OwnedNumbers } from '../usecases/ports';

type TelephonyClient = Pick<PromiseClient<typeof voiceapi.telephony.v1.TelephonyServiceService>, 'getOwnedNumber'>;

/** The tenant's owned numbers, over telephony's gRPC API (null: not the tenant's). */
export function ownedNumbers(telephony: TelephonyClient): OwnedNumbers {
  return {
    async find(scope, by) {
      const r = await nullIfNotFound(telephony.getOwnedNumber(by, contextOf(scope)));
      return r?.number ? { id: r.number.id, phoneNumber: r.number.phoneNumber } : null;
    },
  };
}
