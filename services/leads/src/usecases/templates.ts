import { validationError, type ErrorDetail } from '@voiceapi/kit/errors';
import { type TenantScope } from '@voiceapi/kit/grpc';
import { MESSAGE_CHANNELS, type MessageChannel } from '../domain/contact';
import { placeholdersOf } from '../domain/templates';
import type { TemplateStore } from '../store/template-store';
import type { Template } from '../domain/template';

/** WhatsApp's approved templates number their placeholders: `{{1}}`, `{{2}}`, … */
const NUMBERED = /^[1-9][0-9]{0,2}$/;

export class Templates {
  constructor(
    private readonly store: TemplateStore,
    private readonly now: () => Date = () => new Date(),
  ) {}

  list(scope: TenantScope, channel?: string): Promise<Template[]> {
    return this.store.list(scope, channel ? messageChannel(channel) : undefined);
  }

  async create(
    scope: TenantScope,
    input: { channel: string; name: string; subject?: string; body: string; language?: string },
  ): Promise<Template> {
    const channel = messageChannel(input.channel);
    const problems: ErrorDetail[] = [];
    if (!input.name.trim()) problems.push({ path: 'name', message: 'required' });
    if (!input.body.trim()) problems.push({ path: 'body', message: 'required' });
    if (channel === 'whatsapp' && input.subject !== undefined)
      problems.push({ path: 'subject', message: 'WhatsApp templates have no subject' });
    const variables = placeholdersOf(input.subject, input.body);
    if (channel === 'whatsapp') {
      for (const v of variables)
        if (!NUMBERED.test(v))
          problems.push({
            path: 'body',
            message: `WhatsApp placeholders are numbered ({{1}}, {{2}}): {{${v}}} is not`,
          });
    }
    if (problems.length) throw validationError(problems.map((p) => `${p.path}: ${p.message}`).join('; '), problems);
    return this.store.create(scope, {
      channel,
      name: input.name.trim(),
      ...(input.language && { language: input.language }),
      ...(input.subject !== undefined && { subject: input.subject }),
      body: input.body,
      variables,
      createdAt: this.now(),
    });
  }
}

export function messageChannel(v: string): MessageChannel {
  if (!(MESSAGE_CHANNELS as readonly string[]).includes(v))
    throw validationError('channel must be whatsapp or email', [{ path: 'channel', message: 'whatsapp or email' }]);
  return v as MessageChannel;
}
