/** Request and response types of one method of a ts-proto generated grpc-js service definition. */
export type MethodDef = {
  path: string;
  /** True for a client-streaming method (an upload): the handler reads the requests as they arrive. */
  requestStream: boolean;
  responseStream: false;
  requestSerialize: (value: never) => Buffer;
  requestDeserialize: (value: Buffer) => unknown;
  responseSerialize: (value: never) => Buffer;
  responseDeserialize: (value: Buffer) => unknown;
};

export type UnaryServiceDef = Record<string, MethodDef>;

export type RequestOf<M> = M extends { requestDeserialize: (value: Buffer) => infer R } ? R : never;
export type ResponseOf<M> = M extends { responseDeserialize: (value: Buffer) => infer R } ? R : never;

export type RequestStream<M> = AsyncIterable<RequestOf<M>>;
/** What a handler or client call takes: one request, or a stream of them for client-streaming methods. */
export type RequestArg<M> = M extends { requestStream: true } ? RequestStream<M> : RequestOf<M>;
