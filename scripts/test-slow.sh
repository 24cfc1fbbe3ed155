#!/usr/bin/env bash
# Slow-machine rehearsal (`npm run test:slow`): what CI sees on a weaker or busier machine. Every test
# process runs pinned to one core (taskset) beside a second, CPU-bound process on that core, so the
# tests get about half of one core; the e2e stage runs one file at a time. Takes several times as long
# as `npm test`. Passes when every test passes; the summary warns about tests past a quarter of their
# limit. Arguments go to vitest (e.g. `npm run test:slow -- tests/unit/bm25` or LOUPE_STAGES=unit).
set -euo pipefail
cd "$(dirname "$0")/.."
core=${LOUPE_SLOW_CORE:-0}
taskset -c "$core" node -e 'for (;;);' &
burner=$!
trap 'kill $burner 2>/dev/null' EXIT
echo "test:slow: tests pinned to CPU $core beside a busy process (pid $burner); $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
start=$(date +%s)
status=0
LOUPE_TEST_PIN=$core LOUPE_E2E_ONE_FILE=1 LOUPE_TEST_RESULTS=${LOUPE_TEST_RESULTS:-.test-results/slow} \
  bash scripts/test-stages.sh "$@" || status=$?
# The time and load also when a test failed.
echo "test:slow: $([ $status = 0 ] && echo passed || echo FAILED) in $(( ($(date +%s) - start) / 60 )) min; load $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
