import type { ProcessEntry } from '../../deploy/local/src/manifest';
import { calleesFiles, renderCallees } from '../../tools/grpc-callees';
import { read } from './tree';

// Callers' gRPC addresses and clients come from proto/gen/src/callees.ts, generated from services/manifest.json and
// committed (images ship compiled packages, not the manifest): a manifest or proto change not followed by
// `node --import tsx tools/grpc-callees.ts` fails here, compared in memory.

describe('proto/gen/src/callees.ts (tools/grpc-callees.ts)', () => {
  it.each(Object.entries(calleesFiles()))(
    'proto/gen/src/%s is what the generator writes now (else: node --import tsx tools/grpc-callees.ts)',
    (file, text) => {
      expect(read(`proto/gen/src/${file}`)).toBe(text);
    },
  );

  it('lists every gRPC service of the manifest, with its address setting and its port on this machine', () => {
    const manifest = JSON.parse(read('services/manifest.json')) as { processes: ProcessEntry[] };
    const grpc = manifest.processes.filter((p) => p.protocol === 'grpc');
    const listed = [...calleesFiles()['callees.ts']!.matchAll(/addressEnv: "(\w+)",\n\s+defaultAddress: "([^"]+)"/g)];
    expect(listed.map((m) => [m[1], m[2]])).toEqual(grpc.map((p) => [p.addressEnv, `127.0.0.1:${p.port}`]));
  });

  it('refuses a gRPC service whose ts-proto definitions are missing, naming it', () => {
    const ghost: ProcessEntry = {
      name: 'ghost',
      package: '@voiceapi/ghost',
      workspace: 'services/ghost',
      entry: 'services/ghost/dist/main.js',
      protocol: 'grpc',
      portEnv: 'GRPC_PORT',
      port: 50099,
      addressEnv: 'GHOST_GRPC_ADDR',
      mongoDb: 'ghost',
      chart: 'ghost',
    };
    expect(() => renderCallees([ghost], {})).toThrow(/ghost: expected GhostServiceService .* found none/);
    const noGeneric = { ghost: { v1: { GhostServiceService: {} } } };
    expect(() => renderCallees([ghost], noGeneric)).toThrow(
      /ghost\.v1 has GhostServiceService but no GhostServiceDefinition/,
    );
  });
});
