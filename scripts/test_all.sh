#!/bin/bash
# Runs the make targets named as arguments (make test's steps) one after the
# other, each even when an earlier one failed (except setup and lib, which the
# rest need), streaming their output, and ends with one summary: a line per
# step, then the total as a line by itself, "N passed, M failed, K skipped".
# A step's count is the sum of its own "N passed, M failed[, K skipped]"
# lines; a step that prints none counts as one check, passed or failed by its
# exit status, and one that exits non-zero with no failure counted adds one.
# Logs are kept in build/test-logs/STEP.log. Exits 1 when anything failed.
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
mkdir -p build/test-logs
re='^([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?$'
P=0; F=0; S=0
summary=()
for step in "$@"; do
  log=build/test-logs/$step.log
  echo "=== $step"
  t0=$(date +%s)
  make --no-print-directory "$step" 2>&1 | tee "$log"
  rc=${PIPESTATUS[0]}
  p=0; f=0; s=0; n=0
  while IFS= read -r line; do
    if [[ $line =~ $re ]]; then
      p=$((p + BASH_REMATCH[1])); f=$((f + BASH_REMATCH[2])); s=$((s + ${BASH_REMATCH[4]:-0})); n=$((n + 1))
    fi
  done < "$log"
  if [ $n -eq 0 ]; then
    if [ "$rc" -eq 0 ]; then p=1; else f=1; fi
  elif [ "$rc" -ne 0 ] && [ $f -eq 0 ]; then
    f=1
  fi
  P=$((P + p)); F=$((F + f)); S=$((S + s))
  summary+=("$(printf '%-14s %5d passed, %d failed, %d skipped  (%d s)' "$step" $p $f $s $(( $(date +%s) - t0 )))")
  if [ "$rc" -ne 0 ] && { [ "$step" = setup ] || [ "$step" = lib ]; }; then
    summary+=("(stopped: the steps after $step need it)")
    break
  fi
done
echo
echo "=== summary (logs in build/test-logs/)"
printf '%s\n' "${summary[@]}"
echo "$P passed, $F failed, $S skipped"
[ $F -eq 0 ]
