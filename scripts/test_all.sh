#!/bin/bash
# Runs the make targets named as arguments (make test's steps) one after the
# other, each even when an earlier one failed (except setup and lib, which the
# rest need), streaming their output, and ends with one summary: a line per
# step, then the total as a line by itself,
#   N passed, M failed, K skipped, X expected failures
# A step's counts are the sums of its own result lines (scripts/result.sh:
# "N passed, M failed[, K skipped][, X expected failures]"); a step that
# prints none counts as one check, passed or failed by its exit status, and
# one that exits non-zero with no failure counted adds one. Expected failures
# are the known gaps that suites document (XFAIL), counted neither as passed
# nor as failed.
# After the step lines and before the total, each failed step's log is
# searched for the lines that name a failed test, as each runner prints
# them (failures below; at most 8 a step and 20 in all), so that the end of
# CI's output, often all one sees of it, says what failed.
# Logs are kept in $TEST_ALL_LOGS (default build/test-logs/STEP.log); make
# reads $TEST_ALL_MAKEFILE when set (scripts/testall's test uses both).
# Exits 1 when anything failed.
set -u
# Real TF, the tests' reference, with its stock kernels (scripts/venv.sh says
# why): Go tests start build/venv's python themselves.
export TF_ENABLE_ONEDNN_OPTS="${TF_ENABLE_ONEDNN_OPTS:-0}"
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
. scripts/result.sh
logs=${TEST_ALL_LOGS:-build/test-logs}
mkdir -p "$logs"
P=0; F=0; S=0; X=0
summary=()
failed_steps=()

# failures LOG prints the lines of LOG that name a failed test: go test's
# "--- FAIL: TestX" and "FAIL pkg" (scripts/gotestsum), the C tests' and
# suites' "FAIL what", unittest's "FAIL: test" and "ERROR: test", TAP's
# "not ok", test/valgrind's "NAME exit N" and the two lines after it that
# give the first memcheck error ("NAME first error: KIND", "NAME first
# error at: FRAMES"); each may follow the "suite: "
# prefixes test/run.sh adds, never indentation (a failed test's own output
# is indented), so "XFAIL" and quoted output do not count.
failures() { # log
  grep -E '^([A-Za-z0-9_.+/-]+: ){0,2}(--- FAIL|FAIL[: ]|ERROR: |not ok |valgrind: [^ ]+ (exit |first error))' "$1" | cut -c1-200
}
for step in "$@"; do
  log=$logs/$step.log
  echo "=== $step"
  t0=$(date +%s)
  make --no-print-directory ${TEST_ALL_MAKEFILE:+-f "$TEST_ALL_MAKEFILE"} "$step" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  p=0; f=0; s=0; x=0; n=0
  while IFS= read -r line; do
    if ms_result "$line"; then
      p=$((p + ms_p)); f=$((f + ms_f)); s=$((s + ms_s)); x=$((x + ms_x)); n=$((n + 1))
    fi
  done < <(grep -E '^[0-9]+ passed, [0-9]+ failed' "$log")
  if [ $n -eq 0 ]; then
    if [ "$rc" -eq 0 ]; then p=1; else f=1; fi
  elif [ "$rc" -ne 0 ] && [ $f -eq 0 ]; then
    f=1
  fi
  P=$((P + p)); F=$((F + f)); S=$((S + s)); X=$((X + x))
  [ $f -eq 0 ] || failed_steps+=("$step")
  summary+=("$(printf '%-14s %5d passed, %d failed, %d skipped, %d expected failures  (%d s)' "$step" $p $f $s $x $(( $(date +%s) - t0 )))")
  if [ "$rc" -ne 0 ] && { [ "$step" = setup ] || [ "$step" = lib ]; }; then
    summary+=("(stopped: the steps after $step need it)")
    break
  fi
done
echo
echo "=== summary (logs in $logs/)"
printf '%s\n' "${summary[@]}"
budget=20
for step in "${failed_steps[@]}"; do
  log=$logs/$step.log
  echo "failed in $step ($log):"
  mapfile -t names < <(failures "$log")
  if [ ${#names[@]} -eq 0 ]; then
    # A build error, a crash or a runner that names nothing: its last words.
    echo "  (no line names a failed test; the log ends:)"
    mapfile -t names < <(grep -v '^[[:space:]]*$' "$log" | tail -3 | cut -c1-200)
  fi
  n=${#names[@]}; show=$(( n < 8 ? n : 8 )); show=$(( show < budget ? show : budget ))
  [ $show -gt 0 ] && printf '  %s\n' "${names[@]:0:show}"
  [ $show -lt $n ] && echo "  ... $((n - show)) more in the log"
  budget=$((budget - show))
done
echo "$P passed, $F failed, $S skipped, $X expected failures"
[ $F -eq 0 ]
