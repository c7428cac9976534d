import * as fs from 'node:fs';
import * as path from 'node:path';
import { addressSettings, loadManifest, parseManifest, PROCESS_NODE_OPTIONS, processNodeOptions } from './manifest';

const companies = {
  name: 'companies',
  package: '@voiceapi/companies',
  workspace: 'services/companies',
  entry: 'services/companies/dist/main.js',
  protocol: 'grpc',
  portEnv: 'GRPC_PORT',
  port: 50061,
  addressEnv: 'COMPANIES_GRPC_ADDR',
  mongoDb: 'companies',
  chart: 'companies',
};
const gateway = {
  name: 'gateway',
  package: '@voiceapi/gateway',
  workspace: 'services/gateway',
  entry: 'services/gateway/dist/main.js',
  protocol: 'http',
  portEnv: 'PORT',
  port: 8080,
  mongoDb: 'gateway',
  chart: 'gateway',
};

describe('service manifest', () => {
  it('the repository manifest is valid and lists the gateway and companies', () => {
    const m = loadManifest();
    expect(m.gateway.name).toBe('gateway');
    expect(m.services.map((s) => s.name)).toContain('companies');
  });

  it('a new gRPC service is one entry: it gets a port and the gateway its address', () => {
    const billing = {
      ...companies,
      name: 'billing',
      package: '@voiceapi/billing',
      workspace: 'services/billing',
      entry: 'services/billing/dist/main.js',
      addressEnv: 'BILLING_GRPC_ADDR',
      mongoDb: 'billing',
      chart: 'billing',
      port: 50062,
    };
    const m = parseManifest({ processes: [companies, billing, gateway] });
    expect(m.services.map((s) => s.name)).toEqual(['companies', 'billing']);
    expect(
      addressSettings(
        m,
        new Map([
          ['companies', 1001],
          ['billing', 1002],
        ]),
      ),
    ).toEqual({
      COMPANIES_GRPC_ADDR: '127.0.0.1:1001',
      BILLING_GRPC_ADDR: '127.0.0.1:1002',
    });
  });

  it('names every problem at once', () => {
    const bad = { ...companies, name: 'Billing', entry: 'elsewhere/main.js', addressEnv: undefined, colour: 'red' };
    expect(() => parseManifest({ processes: [bad, gateway, { ...gateway, name: 'gateway2' }] }, 'm.json')).toThrow(
      /unknown field[\s\S]*name: "Billing" does not match[\s\S]*entry: must be inside workspace[\s\S]*addressEnv: required[\s\S]*package "@voiceapi\/gateway" appears twice[\s\S]*exactly one "http" process/,
    );
  });

  it('names the secrets a process alone holds, as setting names', () => {
    expect(
      parseManifest({ processes: [{ ...companies, secrets: ['SIGNING_KEY'] }, gateway] }).services[0]!.secrets,
    ).toEqual(['SIGNING_KEY']);
    expect(parseManifest({ processes: [companies, gateway] }).services[0]!.secrets).toBeUndefined();
    expect(() => parseManifest({ processes: [{ ...companies, secrets: ['signing key'] }, gateway] })).toThrow(
      /secrets: must be a list of setting names/,
    );
    expect(() => parseManifest({ processes: [{ ...companies, secrets: 'SIGNING_KEY' }, gateway] })).toThrow(
      /secrets: must be a list of setting names/,
    );
  });

  it('refuses a path that leaves the repository', () => {
    expect(() =>
      parseManifest({ processes: [{ ...companies, workspace: '../x', entry: '../x/main.js' }, gateway] }),
    ).toThrow(/workspace: .* does not match/);
  });

  it('runs every process with the same Node settings locally and in the image; the environment may add its own', () => {
    const dockerfile = fs.readFileSync(path.resolve(__dirname, '../../images/Dockerfile'), 'utf8');
    expect(dockerfile).toContain(`NODE_OPTIONS=${PROCESS_NODE_OPTIONS} `);
    expect(processNodeOptions({})).toBe(PROCESS_NODE_OPTIONS);
    expect(processNodeOptions({ NODE_OPTIONS: '--max-semi-space-size=16' })).toBe(
      `${PROCESS_NODE_OPTIONS} --max-semi-space-size=16`,
    );
  });
});
