/** A company as the use cases see it (the domain object). Credentials are not part of it. */
export interface Company {
  id: string;
  name: string;
  mobile?: string;
  countryCode?: string;
  countryIso?: string;
  description?: string;
  industry?: string;
  website?: string;
  businessHours?: Record<string, unknown>;
  timezone?: string;
  createdAt: Date;
  updatedAt: Date;
}

export type CompanyFields = Omit<Company, 'id' | 'createdAt' | 'updatedAt'>;

/** The fields a company may be without (every field but its name). */
export type ClearableField = Exclude<keyof CompanyFields, 'name'>;
