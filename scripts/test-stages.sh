#!/usr/bin/env bash
# The two test stages of `npm test` (unit in Node, then e2e in headless Chromium), each with vitest's
# JSON report and the margins report (tests/reporters/margins.ts), then the summary: the slowest tests
# with the share of their time limit, and one closing line. Results go to $LOUPE_TEST_RESULTS
# (default .test-results, gitignored). Extra arguments go to both vitest runs (e.g. a file filter).
#   LOUPE_TEST_PIN=0        run every process on CPU 0 only (taskset), as scripts/test-slow.sh does
#   LOUPE_E2E_ONE_FILE=1    e2e one file at a time (default: vitest.config.ts's two)
#   LOUPE_STAGES="unit e2e" which stages to run
set -euo pipefail
cd "$(dirname "$0")/.."
out=${LOUPE_TEST_RESULTS:-.test-results}
export LOUPE_TEST_RESULTS=$out
rm -rf "$out"
pin=()
[ -n "${LOUPE_TEST_PIN:-}" ] && pin=(taskset -c "$LOUPE_TEST_PIN")
reports=()
for stage in ${LOUPE_STAGES:-unit e2e}; do
  extra=()
  [ "$stage" = e2e ] && [ -n "${LOUPE_E2E_ONE_FILE:-}" ] && extra=(--no-file-parallelism --maxWorkers=1)
  # A failed stage does not stop the next or the summary: the margin table shows in a failed run too.
  "${pin[@]}" npx vitest run --project "$stage" "${extra[@]}" \
    --reporter=default --reporter=json --outputFile.json="$out/$stage.json" \
    --reporter=./tests/reporters/margins.ts "$@" || status=1
  [ -f "$out/$stage.json" ] && reports+=("$out/$stage.json")
done
node scripts/test-summary.mjs "${reports[@]}"
exit "${status:-0}"
