// Three levels: unit specs beside the code; integration tests per service against real MongoDB
// (the embedded store, SecantusDB, locally) and Kafka; end-to-end tests through the gateway with real processes.
// jest only transpiles (swc); `tsc -b` does the type-checking.
const transform = {
  '^.+\\.ts$': [
    '@swc/jest',
    { jsc: { target: 'es2022', parser: { syntax: 'typescript' } }, module: { type: 'commonjs' } },
  ],
};
const common = { transform, testEnvironment: 'node', testPathIgnorePatterns: ['/node_modules/', '/dist/'] };
// The teardown also fails a run in which a test left a server, process or connection open.
const teardown = { globalTeardown: '<rootDir>/test/harness/global-teardown.ts' };
const withInfra = { ...common, ...teardown, globalSetup: '<rootDir>/test/harness/global-setup.ts' };

module.exports = {
  // Real servers and real processes start in these suites; allow for a slow CI machine.
  testTimeout: 90_000,
  reporters: ['default', '<rootDir>/test/harness/summary-reporter.js'],
  projects: [
    {
      ...common,
      ...teardown,
      displayName: 'unit',
      testMatch: [
        '<rootDir>/{libs/*,services/*,deploy/local}/src/**/*.test.ts',
        '<rootDir>/sdk/*/test/**/*.test.ts',
        '<rootDir>/test/conformance/**/*.test.ts',
      ],
    },
    { ...withInfra, displayName: 'integration', testMatch: ['<rootDir>/{libs/*,services/*}/test/**/*.int.test.ts'] },
    { ...withInfra, displayName: 'e2e', testMatch: ['<rootDir>/test/{e2e,fault}/**/*.test.ts'] },
    // On the live cluster of scripts/cluster.sh, through `make cluster-test` only (not in `make test`).
    { ...common, ...teardown, displayName: 'cluster', testMatch: ['<rootDir>/test/cluster/**/*.cluster.test.ts'] },
  ],
};
