import { unservedShapes } from '@voiceapi/kit';
import { campaignQueryShapes, campaignSchema } from './campaign-store';
import { contactQueryShapes, contactSchema } from './contact-store';
import { claimQueryShapes, claimSchema } from './dial-claim-store';
import { routeQueryShapes, routeSchema } from './event-route-store';
import { followupQueryShapes, followupSchema } from './followup-store';
import { messageQueryShapes, messageSchema } from './message-store';
import { scheduleQueryShapes, scheduleSchema } from './schedule-store';
import { templateQueryShapes, templateSchema } from './template-store';

describe('leads stores', () => {
  it.each([
    ['campaigns', campaignSchema, campaignQueryShapes],
    ['contacts', contactSchema, contactQueryShapes],
    ['dial claims', claimSchema, claimQueryShapes],
    ['event routes', routeSchema, routeQueryShapes],
    ['follow-ups', followupSchema, followupQueryShapes],
    ['messages', messageSchema, messageQueryShapes],
    ['schedule', scheduleSchema, scheduleQueryShapes],
    ['templates', templateSchema, templateQueryShapes],
  ] as const)('%s: an index serves every query it runs (equality, then sort, then range) on MongoDB 7', (_name, schema, shapes) => {
    expect(unservedShapes(schema, shapes)).toEqual([]);
  });
});
