/** Object storage: the port and its S3 adapter. */
export * from '../objects/object-store';
export * from '../objects/s3-object-store';
