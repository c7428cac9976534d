import type { MessageChannel } from './contact';

export interface Template {
  id: string;
  channel: MessageChannel;
  name: string;
  language?: string;
  subject?: string;
  body: string;
  /** Placeholder names in order of first appearance. */
  variables: string[];
  createdAt: Date;
}
