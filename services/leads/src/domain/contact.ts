import type { WindowSetting } from './calling-window';

/** The vocabulary of campaigns and contacts, as the HTTP API spells it (decisions file, "Endpoint shapes"). */

export const CHANNELS = ['call', 'whatsapp', 'email'] as const;
export type Channel = (typeof CHANNELS)[number];
export const MESSAGE_CHANNELS = ['whatsapp', 'email'] as const;
export type MessageChannel = (typeof MESSAGE_CHANNELS)[number];
export const isChannel = (v: string): v is Channel => (CHANNELS as readonly string[]).includes(v);

export const CAMPAIGN_STATUSES = ['draft', 'running', 'paused', 'completed'] as const;
export type CampaignStatus = (typeof CAMPAIGN_STATUSES)[number];

export const CONTACT_STATUSES = [
  'sandbox_accepted',
  'scheduled',
  'queued',
  'dialing',
  'in_call',
  'completed',
  'failed',
  'cancelled',
  'messaged',
] as const;
export type ContactStatus = (typeof CONTACT_STATUSES)[number];

/** Statuses with work still to do: a dial waiting for its time, its dispatch or its call. */
export const PENDING: readonly ContactStatus[] = ['scheduled', 'queued', 'dialing', 'in_call'];

/** A contact is dispatched again only after its last dial ended, so this is unique. */
export const dialId = (contactId: string, dispatch: number): string => `${contactId}:${dispatch}`;

export interface Consent {
  outboundCall: boolean;
  capturedAt?: Date;
  source?: string;
}

export interface WindowCheck {
  window: WindowSetting;
  timeZones: string[];
  timeZoneSource: 'number' | 'fallback';
  open: boolean;
  nextOpenAt?: Date;
}

/** The evidence of a call lead's compliance decision, kept on the contact. */
export interface Compliance {
  checkedAt: Date;
  consent: Consent;
  doNotCall: { tenant: boolean; platform: boolean };
  callingWindow: WindowCheck;
}

/** What a contact keeps to render its messages again (a follow-up on a message channel). */
export interface MessageInputs {
  whatsappTemplateId?: string;
  emailTemplateId?: string;
  templateVariables?: Record<string, string>;
  whatsappParams?: Record<string, string>;
}

export interface Campaign {
  id: string;
  name: string;
  type: 'api' | 'csv';
  status: CampaignStatus;
  channels: Channel[];
  agentName?: string;
  /** The tenant's own number its calls are placed from (unset: a platform number). */
  fromNumber?: string;
  callingWindow: WindowSetting;
  maxCallSeconds: number;
  maxAttempts: number;
  retryAfterMinutes: number;
  createdAt: Date;
  updatedAt: Date;
}

export interface CampaignStats {
  contacts: number;
  queued: number;
  completed: number;
  failed: number;
}

export interface Contact {
  id: string;
  campaignId: string;
  phone: string;
  name?: string;
  email?: string;
  channels: Channel[];
  status: ContactStatus;
  attempts: number;
  /** Dial requests dispatched so far: the next dial id is `<id>:<dispatches + 1>`. */
  dispatches: number;
  consent?: Consent;
  compliance?: Compliance;
  nextAttemptAt?: Date;
  lastCallId?: string;
  lastOutcome?: string;
  endReason?: string;
  sandbox: boolean;
  messageInputs?: MessageInputs;
  /** The time zones of the number, kept to re-check the window at dial time without a lookup. */
  timeZones?: string[];
  /** The tenant's own id of the lead (batch ingest): the contact's id follows from it. */
  externalId?: string;
  /** The last status change as its event announced it, re-announced when its cause repeats (decision 0150). */
  lastMove?: LastMove;
  createdAt: Date;
  updatedAt: Date;
}

/** A status change: the statuses before and after it, its time (its event's id) and its end reason. */
export interface LastMove {
  from: ContactStatus;
  to: ContactStatus;
  at: Date;
  endReason?: string;
}

/** What a status change of a contact announces of it (see `ContactLifecycle.move`). */
export type ContactRef = Pick<Contact, 'id' | 'campaignId' | 'status' | 'sandbox'>;

/** Which stats bucket a status counts in (cancelled and sandbox contacts count only as contacts). */
export function statsBucket(status: ContactStatus): keyof Omit<CampaignStats, 'contacts'> | undefined {
  if ((PENDING as readonly string[]).includes(status)) return 'queued';
  if (status === 'completed' || status === 'messaged') return 'completed';
  if (status === 'failed') return 'failed';
  return undefined;
}
