/** gRPC: serving a service, calling one, and the caller's identity (tenant, key mode) on each call. */
export * from '../grpc/types';
export * from '../grpc/server';
export * from '../grpc/client';
export * from '../context';
export * from '../grpc/paging';
export * from '../grpc/callees';
