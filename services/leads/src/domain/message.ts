import type { MessageChannel } from './contact';

/** A rendered message and what became of it. */
export interface Message {
  id: string;
  contactId: string;
  channel: MessageChannel;
  templateId: string;
  /** Phone (WhatsApp) or address (email). */
  to: string;
  subject?: string;
  body: string;
  status: 'queued' | 'sent';
  /** What the adapter answered (a provider's message id). */
  providerId?: string;
  createdAt: Date;
  sentAt?: Date;
}
