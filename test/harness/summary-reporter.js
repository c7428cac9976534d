// Prints one plain closing line ("jest: N passed, N failed, N skipped") that CI can read.
class SummaryReporter {
  onRunComplete(_contexts, results) {
    process.stdout.write(
      `\njest: ${results.numPassedTests} passed, ${results.numFailedTests} failed, ${results.numPendingTests} skipped\n`,
    );
  }
}
module.exports = SummaryReporter;
