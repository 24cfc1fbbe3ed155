// Closes `npm test`: for each stage, the ten slowest tests (and files' hooks) with the share of their time
// limit they used, from tests/reporters/margins.ts; then one line over vitest's JSON reports, e.g.
// "tests: 121 passed, 0 failed, 0 skipped". A test past a quarter of its limit is warned about, never
// failed: a limit catches a hang, and a test creeping toward it shows here long before a slower machine
// fails it.
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** Past this share of its limit a test is named in a warning. */
const WARN_SHARE = 0.25;
const SLOWEST = 10;

const seconds = (ms) => (ms / 1000).toFixed(1).padStart(6) + ' s';

function marginTable(stage, rows) {
  const sorted = [...rows].sort((a, b) => b.durationMs - a.durationMs).slice(0, SLOWEST);
  console.log(`\n${stage}: the ${sorted.length} slowest, with the share of their time limit`);
  console.log(`  ${'time'.padStart(8)}  ${'limit'.padStart(8)}  share  test`);
  for (const r of sorted) {
    const share = r.durationMs / r.limitMs;
    const name = r.name.length > 90 ? r.name.slice(0, 89) + '…' : r.name;
    console.log(
      `  ${seconds(r.durationMs)}  ${seconds(r.limitMs)}  ${(100 * share).toFixed(0).padStart(4)}%  ${r.file} › ${name}`,
    );
  }
  const near = rows.filter((r) => r.durationMs / r.limitMs > WARN_SHARE);
  for (const r of near) {
    console.log(
      `  warning: ${r.file} › ${r.name} used ${(100 * (r.durationMs / r.limitMs)).toFixed(0)}% of its ${seconds(r.limitMs).trim()} limit` +
        (r.kind === 'hook' ? ' (its file’s hooks together, against the project’s hookTimeout)' : ''),
    );
  }
}

let passed = 0;
let failed = 0;
let skipped = 0;
for (const file of process.argv.slice(2)) {
  if (!existsSync(file)) {
    console.error(`test-summary: ${file} missing (a test run did not finish)`);
    process.exit(1);
  }
  const r = JSON.parse(readFileSync(file, 'utf8'));
  passed += r.numPassedTests;
  failed += r.numFailedTests;
  skipped += r.numPendingTests + r.numTodoTests;
  // unit.json → unit.margins.json beside it (written by the margins reporter of the same run).
  const stage = basename(file, '.json');
  const margins = join(dirname(file), `${stage}.margins.json`);
  if (existsSync(margins)) marginTable(stage, JSON.parse(readFileSync(margins, 'utf8')));
  else console.log(`\n${stage}: no ${margins} (run with --reporter=./tests/reporters/margins.ts)`);
}
console.log(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
