const { existsSync, readFileSync, rmSync } = require('node:fs');
const os = require('node:os');
const path = require('node:path');

// Prints one plain closing line ("jest: N passed, N failed, N skipped") that CI can read, and
// before it, for each suite that failed, the last error-level lines its processes logged (the
// harness notes them in TEST_ERROR_LOG): a CI log's tail then says why a request answered 500.
const ERRORS_SHOWN = 12;

class SummaryReporter {
  constructor() {
    process.env.TEST_ERROR_LOG ??= path.join(os.tmpdir(), `voiceapi-test-errors-${process.pid}.jsonl`);
    rmSync(process.env.TEST_ERROR_LOG, { force: true });
  }

  onRunComplete(_contexts, results) {
    const file = process.env.TEST_ERROR_LOG;
    const failed = new Set(
      results.testResults
        .filter((r) => r.numFailingTests > 0 || r.testExecError)
        .map((r) => path.relative(process.cwd(), r.testFilePath)),
    );
    if (failed.size > 0 && existsSync(file)) {
      const noted = readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
      for (const suite of failed) {
        const mine = noted.filter((n) => n.suite === suite).slice(-ERRORS_SHOWN);
        if (mine.length === 0) continue;
        process.stdout.write(`\nerrors logged by the processes of ${suite} (last ${mine.length}):\n`);
        for (const n of mine) process.stdout.write(`  [${n.process}] ${n.line.slice(0, 600)}\n`);
      }
    }
    process.stdout.write(
      `\njest: ${results.numPassedTests} passed, ${results.numFailedTests} failed, ${results.numPendingTests} skipped\n`,
    );
  }
}
module.exports = SummaryReporter;
