import { validationError } from '@voiceapi/kit/errors';
import { registerService, requireTenant, type ServiceRegistration } from '@voiceapi/kit/grpc';
import { type Logger } from '@voiceapi/kit/service';
import { voiceapi } from '@voiceapi/proto';
import type { Delivery } from '../domain/delivery';
import type { Endpoints, EndpointView } from '../usecases/endpoints';

const pb = voiceapi.webhooks.v1;

/** gRPC adapter: maps messages to use-case calls and domain objects back, nothing more. */
export function webhooksService(uc: Endpoints, log: Logger): ServiceRegistration {
  return registerService(
    'voiceapi.webhooks.v1.WebhooksService',
    pb.WebhooksServiceService,
    {
      registerEndpoint: async (req, ctx) => {
        const { endpoint, secret } = await uc.register(requireTenant(ctx), req.url, req.events);
        return { endpoint: endpointToProto(endpoint), secret };
      },
      listEndpoints: async (_req, ctx) => ({ endpoints: (await uc.list(requireTenant(ctx))).map(endpointToProto) }),
      listSubscribedTypes: async (_req, ctx) => ({ types: await uc.receivedTypes(requireTenant(ctx)) }),
      listDeliveries: async (req) => ({
        deliveries: (await uc.deliveries(req.endpointId, req.limit, req.status)).map(deliveryToProto),
      }),
      recoverDeliveries: async (req) => {
        if (!req.since) throw validationError('since is required', [{ path: 'since', message: 'required' }]);
        return { queued: await uc.recover(req.endpointId, req.since, req.until) };
      },
      updateEndpoint: async (req) => {
        const endpoint = await uc.update(req.endpointId, {
          ...(req.url !== undefined && { url: req.url }),
          ...(req.setEvents && { events: req.events }),
          ...(req.enabled !== undefined && { enabled: req.enabled }),
        });
        return { endpoint: endpointToProto(endpoint) };
      },
      deleteEndpoint: async (req) => {
        await uc.remove(req.endpointId);
        return {};
      },
      rotateSecret: async (req) => {
        const { endpoint, secret } = await uc.rotate(req.endpointId);
        return { endpoint: endpointToProto(endpoint), secret };
      },
    },
    log,
  );
}

function endpointToProto(e: EndpointView): voiceapi.webhooks.v1.Endpoint {
  return pb.Endpoint.fromPartial({
    id: e.id,
    url: e.url,
    events: e.events,
    status: e.status,
    ...(e.disabledReason && { disabledReason: e.disabledReason }),
    createTime: e.createdAt,
  });
}

function deliveryToProto(d: Delivery): voiceapi.webhooks.v1.Delivery {
  return pb.Delivery.fromPartial({
    id: d._id,
    eventId: d.messageId,
    type: d.type,
    attempts: d.attempts,
    status: d.status,
    ...(d.lastStatusCode !== undefined && { lastStatusCode: d.lastStatusCode }),
    ...(d.lastError !== undefined && { lastError: d.lastError }),
    ...(d.status === 'pending' && d.nextAttemptAt && { nextAttemptTime: d.nextAttemptAt }),
    createTime: d.createdAt,
  });
}
