#!/bin/bash
# Builds the library if needed and runs every suite under test/:
#   c          test/c/*_test.c, compiled with -Wall -Werror against build/libtensorflow.so,
#              run with scripts/venv.sh's oneDNN and OpenBLAS
#   symbols    the export list (test/symbols.sh)
#   headers    our headers against TF 2.15's own (test/headers/abi_check.sh)
#   numeric    kernels against NumPy (test/numeric)
#   tfheaders  a client compiled with TF's own headers (test/tfheaders)
#   gobind     the official TF Go bindings as a client (test/gobind)
#   models     GraphDefs from TF's own test data against NumPy (test/models)
#   valgrind   the C tests under memcheck (test/valgrind)
#   fuzz       libFuzzer over import + Run with feeds, 30 s (test/fuzz)
#   tforacle   kernels and generated graphs against real TF 2.15 (test/tforacle)
#   capidiff   the C API against TF's own libtensorflow (test/capidiff)
# Each suite ends with "N passed, M failed[, K skipped][, X expected failures]"
# (scripts/result.sh); the last line sums them. Arguments name the suites to
# run (default: all).
repo=$(cd "$(dirname "$0")/.." && pwd)
[ -e "$repo/build/libtensorflow.so" ] || make -C "$repo" >&2 || { echo "0 passed, 1 failed"; exit 1; }
. "$repo/scripts/result.sh"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0; skip=0; xfail=0

# Adds a suite's result line (its last line) to the totals.
count() { # name output
  if ms_result "$(echo "$2" | tail -1)"; then
    pass=$((pass+ms_p)); fail=$((fail+ms_f)); skip=$((skip+ms_s)); xfail=$((xfail+ms_x))
  else
    echo "FAIL $1: no result line (crashed?)"; fail=$((fail+1))
  fi
}

suite_c() {
  local src name out
  for src in "$repo"/test/c/*_test.c; do
    name=$(basename "$src" .c)
    if ! gcc -I "$repo/include" -o "$tmp/$name" "$src" -L "$repo/build" -ltensorflow \
        -Wl,-rpath,"$repo/build" -lpthread -lm -Wall -Werror; then
      echo "FAIL $name: does not compile"; fail=$((fail+1)); continue
    fi
    # With the libraries a user's session loads (scripts/venv.sh: the
    # wheels' oneDNN and OpenBLAS), as the Python, model and oracle suites
    # run; the subshell keeps them from the suites after this one.
    out=$(ms_root=$repo; . "$repo/scripts/venv.sh"; "$tmp/$name" 2>&1); echo "$out" | sed "s/^/$name: /"
    count "$name" "$out"
  done
}

suite_symbols() {
  if "$repo/test/symbols.sh"; then pass=$((pass+1)); else fail=$((fail+1)); fi
}

# A script whose last line is "N passed, M failed"; its output is shown as
# it comes (some suites run for minutes).
suite_script() { # name command...
  local name=$1
  shift
  "$@" 2>&1 | tee "$tmp/$name.out" | sed -u "s/^/$name: /"
  count "$name" "$(cat "$tmp/$name.out")"
}

suites=${*:-c symbols headers numeric tfheaders gobind models valgrind fuzz tforacle capidiff}
for s in $suites; do
  t0=$(date +%s); ms_cpu "$tmp/times"; c0=$ms_cpu_s
  case $s in
    c) suite_c ;;
    symbols) suite_symbols ;;
    headers) suite_script headers "$repo/test/headers/abi_check.sh" ;;
    numeric) suite_script numeric /usr/bin/python3 "$repo/test/numeric/test_numeric.py" ;;
    tfheaders) suite_script tfheaders "$repo/test/tfheaders/run.sh" ;;
    gobind) suite_script gobind "$repo/test/gobind/run.sh" ;;
    models) suite_script models "$repo/test/models/run.sh" ;;
    valgrind) suite_script valgrind "$repo/test/valgrind/run.sh" ;;
    fuzz) suite_script fuzz "$repo/test/fuzz/run.sh" ;;
    tforacle) suite_script tforacle "$repo/test/tforacle/run.sh" ;;
    capidiff) suite_script capidiff "$repo/test/capidiff/run.sh" ;;
    *) echo "unknown suite $s"; fail=$((fail+1)) ;;
  esac
  ms_cpu "$tmp/times"
  echo "-- $s: $(( $(date +%s) - t0 )) s, $((ms_cpu_s - c0)) s CPU, load $(cut -d' ' -f1 /proc/loadavg 2>/dev/null)"
done
ms_result_line $pass $fail $skip $xfail
[ $fail -eq 0 ]
