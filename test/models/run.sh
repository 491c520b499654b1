#!/bin/sh
# Runs the field models of test/models (GraphDefs from TensorFlow's own test
# data) through build/libtensorflow.so and checks them against TensorFlow
# 2.15 itself (build/venv), or against NumPy where TF is not installed:
#   1. provenance: each tf/ file is byte-identical to its source in the TF
#      2.15.0 Go module, when the module cache has it (else says so);
#   2. reference.py draws inputs (seed $MODELS_SEED, or a fresh one that it
#      prints), has TF (or its NumPy interpreter) compute the expected
#      outputs and writes one plan per case;
#   3. runner.c runs every plan through the C API.
# The last line is "N passed, M failed, K skipped, X expected failures" (X: the
# XFAIL cases, known gaps; scripts/result.sh).   Usage: test/models/run.sh [CASE...]
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
here=$repo/test/models
[ -e "$repo/build/libtensorflow.so" ] || make -C "$repo" lib >&2 || { echo "0 passed, 1 failed"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0

tf=$(go env GOMODCACHE 2>/dev/null)/github.com/tensorflow/tensorflow@v2.15.0+incompatible
if [ -d "$tf" ]; then
  checked=0
  for pair in $(/usr/bin/python3 -c '
import json, sys
for c in json.load(open(sys.argv[1]))["cases"]:
    print(c["model"] + "=" + c["source"])' "$here/models.json" | sort -u); do
    ours=${pair%%=*}; src=${pair#*=}
    if cmp -s "$here/$ours" "$tf/$src"; then checked=$((checked+1)); else
      echo "FAIL provenance: $ours differs from $src of the TF 2.15.0 module"; fail=$((fail+1)); fi
  done
  echo "provenance: $checked model files identical to their sources in the TF 2.15.0 module"
else
  echo "provenance: TF 2.15.0 module not in the Go module cache; copies not compared"
fi

if ! gcc -O1 -Wall -Werror -std=c11 -D_POSIX_C_SOURCE=200809L -I "$repo/include" \
    "$here/runner.c" -o "$tmp/runner" -L "$repo/build" -ltensorflow \
    -Wl,-rpath,"$repo/build" -lm; then
  echo "0 passed, $((fail+1)) failed"; exit 1
fi
ms_root=$repo; . "$repo/scripts/venv.sh"; . "$repo/scripts/result.sh"
if ms_have_tf; then ref="$MS_PY $here/reference.py $tmp/plans --tf"; else ref="/usr/bin/python3 $here/reference.py $tmp/plans"; fi
if ! TF_CPP_MIN_LOG_LEVEL=3 $ref ${MODELS_SEED:+--seed "$MODELS_SEED"} "$@"; then
  echo "0 passed, $((fail+1)) failed"; exit 1
fi
out=$("$tmp/runner" "$tmp/plans"); echo "$out" | sed '$d'
ms_result "$(echo "$out" | tail -1)" || { echo "0 passed, $((fail+1)) failed"; exit 1; }
ms_result_line "$ms_p" $((ms_f+fail)) "$ms_s" "$ms_x"
[ $((ms_f+fail)) -eq 0 ]
