export interface EventRoute {
  eventType: string;
  campaignId: string;
  createdAt: Date;
}
