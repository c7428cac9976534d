import { type TenantScope } from '@voiceapi/kit/grpc';
import { modelOf, objectIds, TenantCollection, type QueryShape } from '@voiceapi/kit/mongo';
import { Schema, type Connection, type Types } from 'mongoose';
import type { MessageChannel } from '../domain/contact';
import type { Template } from '../domain/template';

interface TemplateDoc extends Omit<Template, 'id'> {
  _id: Types.ObjectId;
  tenantId: string;
}

export const templateSchema = new Schema<TemplateDoc>(
  {
    tenantId: { type: String, required: true },
    channel: { type: String, required: true },
    name: { type: String, required: true },
    language: String,
    subject: String,
    body: { type: String, required: true },
    variables: { type: [String], required: true },
    createdAt: { type: Date, required: true },
  },
  { collection: 'omni_templates', versionKey: false, minimize: true },
);
// Serves `by-channel` and `all`: a tenant's templates, newest first, of one channel or both.
templateSchema.index({ tenantId: 1, channel: 1, createdAt: -1 });
templateSchema.index({ tenantId: 1, createdAt: -1 });
export const templateQueryShapes: QueryShape[] = [
  { name: 'by-channel', equality: ['tenantId', 'channel'], sort: { createdAt: -1 } },
  { name: 'all', equality: ['tenantId'], sort: { createdAt: -1 } },
];

/** A tenant's templates are a short list, answered whole. */
export const MAX_TEMPLATES = 500;

function toTemplate(doc: TemplateDoc): Template {
  const { _id, tenantId: _t, ...rest } = doc;
  return { id: _id.toString(), ...rest };
}

export class TemplateStore {
  private readonly templates: TenantCollection<TemplateDoc>;

  constructor(conn: Connection) {
    this.templates = new TenantCollection(
      modelOf(conn, 'OmniTemplate', templateSchema),
      objectIds,
      templateQueryShapes,
    );
  }

  async create(scope: TenantScope, t: Omit<Template, 'id'>): Promise<Template> {
    return toTemplate(await this.templates.insert(scope, t));
  }

  /** The template (reads asked at once share one: the leads of a batch name the same few). */
  async get(scope: TenantScope, id: string): Promise<Template | null> {
    const doc = await this.templates.findByIdShared(scope, id);
    return doc && toTemplate(doc);
  }

  async list(scope: TenantScope, channel?: MessageChannel): Promise<Template[]> {
    const docs = await this.templates.find(scope, channel ? { channel } : {}, {
      sort: { createdAt: -1 },
      limit: MAX_TEMPLATES,
    });
    return docs.map(toTemplate);
  }
}
