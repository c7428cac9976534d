import type { ServiceClients } from '../../clients';
import { analyticsRoutes } from './analytics';
import type { CallStreams } from './call-stream';
import { callRoutes } from './calls';
import { contactCallRoutes } from './contact-calls';
import { numberRoutes } from './numbers';
import { recordingLinkRoutes } from './recordings';

export { recordingRoutes } from './recordings';

/** The unified call feed, a contact's calls, recordings, analytics and numbers, owned by the telephony service. */
export function telephonyRoutes(clients: ServiceClients, streams: CallStreams) {
  // In this order: Express matches routes in the order they are mounted, and the OpenAPI document lists them so.
  return [
    ...callRoutes(clients, streams),
    ...recordingLinkRoutes(clients),
    ...contactCallRoutes(clients),
    ...analyticsRoutes(clients),
    ...numberRoutes(clients),
  ];
}
