export interface PhoneNumber {
  id: string;
  phoneNumber: string;
  countryIso: string;
  monthlyCredits: number;
  /** `available` in the pool, `active` once a tenant owns it. */
  status: 'available' | 'active';
  /** The owner; unset while in the pool. */
  tenantId?: string;
  agentId?: string;
  purchasedAt?: Date;
  createdAt: Date;
}
