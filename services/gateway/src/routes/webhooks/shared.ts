// Helpers of the webhook route groups (endpoints, deliveries, secret rotation): the endpoint's 404.
export const WEBHOOK_404 = { 404: 'No such webhook (`not_found`)' };
