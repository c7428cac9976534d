import { commonReasons, notFound, validationError } from '@voiceapi/kit/errors';
import { type TenantScope } from '@voiceapi/kit/grpc';
import { type Page } from '@voiceapi/kit/mongo';
import { randomUUID } from 'node:crypto';
import { telephonyReasons } from '../reasons';
import type { NumberStore } from '../store/number-store';
import type { PhoneNumber } from '../domain/number';
import type { Wallet } from './ports';

/** E.164: a plus, a country code, at most 15 digits. */
export const E164 = /^\+[1-9]\d{6,14}$/;
const COUNTRY = /^[A-Z]{2}$/;
const MAX_MONTHLY_CREDITS = 1_000_000;

export type Purchase =
  | { status: 'sandbox_accepted' }
  | { status: 'purchased'; number: PhoneNumber; creditsCharged: number; balanceAfter: number };

/** The number pool and tenants' numbers: bought once, paid through billing, or assigned free. */
export class Numbers {
  constructor(
    private readonly d: {
      numbers: NumberStore;
      wallet: Wallet;
      now: () => Date;
    },
  ) {}

  list(scope: TenantScope, page: number, limit: number): Promise<Page<PhoneNumber>> {
    return this.d.numbers.ownedPage(scope, page, limit);
  }

  /** The pool (no tenant's data); the scope says a tenant asked. */
  available(
    _scope: TenantScope,
    countryIso: string | undefined,
    contains: string | undefined,
    limit: number,
  ): Promise<PhoneNumber[]> {
    const problems = [];
    if (countryIso !== undefined && !COUNTRY.test(countryIso))
      problems.push({ path: 'countryIso', message: 'must be two capital letters (ISO 3166-1 alpha-2)' });
    if (contains !== undefined && !/^\d{1,15}$/.test(contains))
      problems.push({ path: 'contains', message: 'must be 1–15 digits' });
    if (problems.length > 0) throw validationError('invalid number search', problems);
    return this.d.numbers.available(countryIso, contains, Math.min(Math.max(limit || 50, 1), 100));
  }

  /** Buys a pool number: the sale is claimed (one tenant wins), then debited by reference, so a retry charges once. */
  async purchase(scope: TenantScope, phoneNumber: string): Promise<Purchase> {
    if (!E164.test(phoneNumber))
      throw validationError('invalid number', [
        { path: 'phoneNumber', message: 'must be an E.164 number, e.g. +14155550100' },
      ]);
    const offered = await this.d.numbers.byNumber(phoneNumber);
    if (!offered) throw telephonyReasons.error('number_not_found', `${phoneNumber} is not in the number pool`);
    if (offered.status !== 'available')
      throw telephonyReasons.error('number_already_owned', `${phoneNumber} is already owned`);
    if (scope.mode === 'sandbox') return { status: 'sandbox_accepted' };
    const now = this.d.now();
    const claim = await this.d.numbers.claimSale(scope.tenantId, phoneNumber, now);
    if (claim === 'taken') throw telephonyReasons.error('number_already_owned', `${phoneNumber} is already owned`);
    let charged = { creditsCharged: 0, balanceAfter: 0 };
    if (offered.monthlyCredits > 0) {
      // A failure leaves the outcome unknown: the claim stays this tenant's and a retry resumes it, charged once.
      const debit = await this.d.wallet.debitNumber(
        scope,
        `number:${phoneNumber}`,
        offered.monthlyCredits,
        `Number ${phoneNumber}, first month`,
      );
      if (debit === 'insufficient') {
        await this.d.numbers.dropSale(scope.tenantId, phoneNumber);
        throw telephonyReasons.error(
          'insufficient_credits',
          `the wallet cannot cover ${offered.monthlyCredits} credits`,
        );
      }
      charged = debit;
    }
    const number = await this.d.numbers.completeSale(scope.tenantId, phoneNumber, now);
    if (!number) throw commonReasons.error('internal_error', 'the sold number vanished');
    return { status: 'purchased', number, ...charged };
  }

  async owned(scope: TenantScope, opts: { id?: string; phoneNumber?: string }): Promise<PhoneNumber> {
    const n = await this.d.numbers.owned(scope, opts);
    if (!n) throw notFound('number');
    return n;
  }

  /** Operator: offered to every tenant. */
  async addToPool(phoneNumber: string, countryIso: string, monthlyCredits: number): Promise<PhoneNumber> {
    this.check(phoneNumber, countryIso, monthlyCredits);
    const added = await this.d.numbers.addToPool({
      id: randomUUID(),
      phoneNumber,
      countryIso,
      monthlyCredits,
      createdAt: this.d.now(),
    });
    if (!added) throw commonReasons.error('conflict', `${phoneNumber} is already in the pool or owned`);
    return added;
  }

  /** Operator: the number becomes the tenant's without a charge. */
  async assign(scope: TenantScope, phoneNumber: string, countryIso: string): Promise<PhoneNumber> {
    this.check(phoneNumber, countryIso, 0);
    const n = await this.d.numbers.assign(scope.tenantId, { phoneNumber, countryIso, id: randomUUID() }, this.d.now());
    if (!n) throw telephonyReasons.error('number_already_owned', `${phoneNumber} is already owned`);
    return n;
  }

  private check(phoneNumber: string, countryIso: string, monthlyCredits: number): void {
    const problems = [];
    if (!E164.test(phoneNumber))
      problems.push({ path: 'phoneNumber', message: 'must be an E.164 number, e.g. +14155550100' });
    if (!COUNTRY.test(countryIso))
      problems.push({ path: 'countryIso', message: 'must be two capital letters (ISO 3166-1 alpha-2)' });
    if (!Number.isInteger(monthlyCredits) || monthlyCredits < 0 || monthlyCredits > MAX_MONTHLY_CREDITS)
      problems.push({ path: 'monthlyCredits', message: `must be a whole number from 0 to ${MAX_MONTHLY_CREDITS}` });
    if (problems.length > 0) throw validationError('invalid number', problems);
  }
}
