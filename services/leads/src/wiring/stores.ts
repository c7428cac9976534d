import type { OpenedService } from '@voiceapi/kit/service';
import type { Config } from '../config';
import { CampaignStore } from '../store/campaign-store';
import { ContactStore } from '../store/contact-store';
import { DoNotCallStore } from '../store/do-not-call-store';
import { EventRouteStore } from '../store/event-route-store';
import { FollowupStore } from '../store/followup-store';
import { MessageStore } from '../store/message-store';
import { ScheduleStore } from '../store/schedule-store';
import { TemplateStore } from '../store/template-store';

export type Stores = ReturnType<typeof openStores>;

export function openStores({ conn }: OpenedService<Config>) {
  return {
    campaigns: new CampaignStore(conn),
    contacts: new ContactStore(conn),
    dnc: new DoNotCallStore(conn),
    routes: new EventRouteStore(conn),
    templates: new TemplateStore(conn),
    messages: new MessageStore(conn),
    schedule: new ScheduleStore(conn),
    followups: new FollowupStore(conn),
  };
}
