# Sourced by the test scripts: the one result line every suite ends with,
#   N passed, M failed[, K skipped][, X expected failures]
# where expected failures are the known gaps a suite documents (test/models'
# and tforacle's XFAIL cases), counted apart from both passed and failed.
# POSIX sh, so that /bin/sh scripts can source it too.

# ms_result LINE: when LINE is a result line, sets ms_p ms_f ms_s ms_x to its
# four counts (0 where a part is absent) and succeeds; else fails.
ms_result() {
  ms_r=$(printf '%s\n' "$1" | sed -nE 's/^([0-9]+) passed, ([0-9]+) failed(, ([0-9]+) skipped)?(, ([0-9]+) expected failures?)?$/\1 \2 \4. \6./p')
  [ -n "$ms_r" ] || return 1
  set -- $ms_r
  ms_p=$1; ms_f=$2; ms_s=${3%.}; ms_x=${4%.}
  ms_s=${ms_s:-0}; ms_x=${ms_x:-0}
}

# ms_result_line P F S X: prints the result line; the optional parts only
# when they are not zero.
ms_result_line() {
  ms_l="$1 passed, $2 failed"
  if [ "${3:-0}" -ne 0 ] || [ "${4:-0}" -ne 0 ]; then ms_l="$ms_l, ${3:-0} skipped"; fi
  if [ "${4:-0}" -ne 0 ]; then ms_l="$ms_l, $4 expected failures"; fi
  echo "$ms_l"
}

# ms_cpu SCRATCH: sets ms_cpu_s to the CPU seconds (user + system) of the
# calling shell's finished children, writing `times` into the file SCRATCH
# (times must run in the calling shell itself, not in a $(...) subshell).
# A suite's or test's CPU time beside its wall time says whether a slow run
# did more work or waited (for a CPU, the network, a lock).
ms_cpu() {
  times >"$1"
  ms_cpu_s=$(awk 'NR == 2 { for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60 + a[2] } } END { printf "%.0f", t }' "$1")
}
