// Closes `npm test`: for each stage, the ten slowest tests (and files' hooks) with the share of their time
// limit they used, from tests/reporters/margins.ts; the slowest files with their share of the stage's
// summed file time (where a shorter stage has to come from); the machine (CPU model, count, load: CI draws
// Xeon or EPYC machines); then one line over vitest's JSON reports, e.g.
// "tests: 121 passed, 0 failed, 0 skipped". A test past a quarter of its limit is warned about, never
// failed: a limit catches a hang, and a test creeping toward it shows here long before a slower machine
// fails it.
import { existsSync, readFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
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

/** The slowest files of a stage by wall time (start to end, hooks included), from vitest's JSON report. */
function fileTable(stage, results) {
  const files = results
    .filter((f) => f.startTime && f.endTime)
    .map((f) => ({ name: f.name.replace(`${process.cwd()}/`, ''), ms: f.endTime - f.startTime }));
  if (files.length === 0) return;
  const sum = files.reduce((s, f) => s + f.ms, 0);
  const wall =
    Math.max(...results.map((f) => f.endTime ?? 0)) -
    Math.min(...results.map((f) => f.startTime ?? Infinity));
  const top = [...files].sort((a, b) => b.ms - a.ms).slice(0, 15);
  const topMs = top.reduce((s, f) => s + f.ms, 0);
  console.log(
    `\n${stage}: ${files.length} files, ${seconds(sum).trim()} of file time in ${seconds(wall).trim()} of wall time; the ${top.length} slowest hold ${((100 * topMs) / sum).toFixed(0)}% of it`,
  );
  for (const f of top)
    console.log(`  ${seconds(f.ms)}  ${((100 * f.ms) / sum).toFixed(1).padStart(5)}%  ${f.name}`);
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
  fileTable(stage, r.testResults ?? []);
  const margins = join(dirname(file), `${stage}.margins.json`);
  if (existsSync(margins)) marginTable(stage, JSON.parse(readFileSync(margins, 'utf8')));
  else console.log(`\n${stage}: no ${margins} (run with --reporter=./tests/reporters/margins.ts)`);
}
// Which machine, so that a run's times can be read against its kind (CI draws Xeon or EPYC machines).
const cores = cpus();
console.log(
  `\nmachine: ${cores[0]?.model.trim() ?? 'unknown CPU'}, ${cores.length} CPUs, load ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' / ')} (1 / 5 / 15 min) at the end`,
);
console.log(`\ntests: ${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed > 0 || passed === 0 ? 1 : 0);
