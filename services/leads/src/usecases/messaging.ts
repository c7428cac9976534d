import { scopeOfRecord, type TenantScope } from '@voiceapi/kit/grpc';
import { type Logger } from '@voiceapi/kit/service';
import type { Contact, MessageChannel } from '../domain/contact';
import type { ContactStore } from '../store/contact-store';
import type { MessageStore } from '../store/message-store';
import type { Message } from '../domain/message';
import type { TemplateStore } from '../store/template-store';
import type { ContactLifecycle } from './lifecycle';
import { renderTemplate } from './leads';
import { messageChannel } from './templates';
import type { LeadEvents, MessageAdapter } from './ports';

/**
 * The default adapter: the rendered message, already stored, is its own record (the operator
 * reads it with `GET /admin/v1/tenants/{tenantId}/messages`); nothing is sent live.
 */
export class RecordingMessageAdapter implements MessageAdapter {
  send(message: Message): Promise<{ providerId: string }> {
    return Promise.resolve({ providerId: `recorded:${message.id}` });
  }
}

export const MAX_MESSAGES = 100;

/** Hands requested messages to the adapter (from the leads stream) and lists them for operators. */
export class Messaging {
  constructor(
    private readonly d: {
      messages: MessageStore;
      contacts: ContactStore;
      lifecycle: ContactLifecycle;
      adapter: MessageAdapter;
      log: Logger;
      now: () => Date;
    },
  ) {}

  async list(scope: TenantScope, channel: string | undefined, limit: number): Promise<Message[]> {
    return this.d.messages.list(
      scope,
      channel ? messageChannel(channel) : undefined,
      Math.min(MAX_MESSAGES, Math.max(1, limit || MAX_MESSAGES)),
    );
  }

  /** Sends one requested message once: a redelivery finds it sent and stops. */
  async deliver(tenantId: string, messageId: string): Promise<void> {
    const scope = scopeOfRecord(tenantId);
    const message = await this.d.messages.get(scope, messageId);
    // Erased with its contact, or sent already.
    if (!message || message.status === 'sent') return;
    const { providerId } = await this.d.adapter.send({ ...message, tenantId });
    await this.d.messages.markSent(scope, message.id, providerId, this.d.now());
    const contact = await this.d.contacts.get(scope, message.contactId);
    // A contact without the call channel is done once messaged; with it, its calls decide.
    if (contact && !contact.channels.includes('call') && !['messaged', 'cancelled'].includes(contact.status)) {
      await this.d.lifecycle.move(scope, contact, 'messaged', { from: [contact.status] });
    }
  }
}

/** A follow-up on a message channel: the contact's template rendered again and sent like the first. */
export class MessageFollowups {
  constructor(
    private readonly d: { templates: TemplateStore; messages: MessageStore; outbox: LeadEvents; now: () => Date },
  ) {}

  async send(scope: TenantScope, contact: Contact, channel: MessageChannel | 'call'): Promise<void> {
    if (channel === 'call') return;
    const inputs = contact.messageInputs ?? {};
    const templateId = channel === 'whatsapp' ? inputs.whatsappTemplateId : inputs.emailTemplateId;
    const template = templateId ? await this.d.templates.get(scope, templateId) : null;
    const to = channel === 'whatsapp' ? contact.phone : contact.email;
    if (!template || !to)
      throw new Error(`contact ${contact.id} has no ${channel} template or address to follow up with`);
    const r = renderTemplate(template, inputs, to);
    if ('missing' in r) throw new Error(`contact ${contact.id}'s ${channel} template needs values it no longer has`);
    const now = this.d.now();
    const message: Message = {
      id: this.d.messages.newId(),
      contactId: contact.id,
      channel,
      templateId: template.id,
      to,
      ...(r.subject !== undefined && { subject: r.subject }),
      body: r.body,
      status: 'queued',
      createdAt: now,
    };
    const event = {
      kind: 'messageRequested' as const,
      tenantId: scope.tenantId,
      contactId: contact.id,
      messageId: message.id,
      channel,
      at: now,
    };
    await this.d.outbox.announce([this.d.outbox.make(event)], () => this.d.messages.createMany(scope, [message]), {
      readBack: this.d.messages.stored(scope, message.id),
    });
  }
}
