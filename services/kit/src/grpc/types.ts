/** Request and response types of one method of a ts-proto generated grpc-js service definition. */
export type MethodDef = {
  path: string;
  requestStream: false;
  responseStream: false;
  requestSerialize: (value: never) => Buffer;
  requestDeserialize: (value: Buffer) => unknown;
  responseSerialize: (value: never) => Buffer;
  responseDeserialize: (value: Buffer) => unknown;
};

export type UnaryServiceDef = Record<string, MethodDef>;

export type RequestOf<M> = M extends { requestDeserialize: (value: Buffer) => infer R } ? R : never;
export type ResponseOf<M> = M extends { responseDeserialize: (value: Buffer) => infer R } ? R : never;
