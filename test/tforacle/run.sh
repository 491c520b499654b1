#!/bin/bash
# The TF oracle suite: mstream checked against real TensorFlow 2.15
# (build/venv, made by scripts/setup.sh). Three parts, each counted:
#   kernels  the kernel conformance suite (kernels/kerneltest) on the CPU
#            with TF's outputs and error codes as the reference: every case
#            exported as a GraphDef, run by TF (kernels/kerneltest/tfeval.py),
#            one count per op family;
#   grads    grad's gradient graphs against tf.gradients (grad_test.go),
#            one count per graph;
#   graphs   test/tforacle/gen.py's plans (Keras models frozen as users
#            freeze them, the bundled models, the error catalogue, the
#            differential fuzzer) run through the C API by test/models'
#            runner.c, one count per case.
# TF's answers are cached under build/tforacle/, keyed by the hash of the
# generators and their inputs, so TF starts only when something changed.
# Knobs: TFORACLE_FUZZ (graphs, default 100), TFORACLE_SEED (default 1),
# KERNELTEST_SEED (default 1), TFORACLE_PARTS (default "kernels grads graphs").
# The last line is "N passed, M failed, K skipped, X expected failures"
# (scripts/result.sh; X: the plans' XFAIL cases, known gaps).
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
here=$repo/test/tforacle
ms_root=$repo; . "$repo/scripts/venv.sh"; . "$repo/scripts/result.sh"
if ! ms_have_tf; then echo "0 passed, 0 failed, 1 skipped"; exit 0; fi
[ -e "$repo/build/libtensorflow.so" ] || make -C "$repo" lib >&2 || { echo "0 passed, 1 failed"; exit 1; }
cache=$repo/build/tforacle; mkdir -p "$cache"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0; xfail=0
export TF_CPP_MIN_LOG_LEVEL=3 MSTREAM_DEVICE=cpu

part_kernels() {
  local out
  out=$(cd "$repo" && KERNELTEST_TF=$MS_PY KERNELTEST_TF_CACHE=$cache KERNELTEST_SEED=${KERNELTEST_SEED:-1} \
    go test ./kernels/cpu -run '^TestConformance$' -count=1 -v -timeout 30m 2>&1)
  echo "$out" | grep -E '(kerneltest|tforacle)\.go:[0-9]+: |--- FAIL' | sed 's/^ *//'
  local p f
  p=$(echo "$out" | grep -cE '^\s+--- PASS: TestConformance/')
  f=$(echo "$out" | grep -cE '^\s+--- FAIL: TestConformance/')
  if ! echo "$out" | grep -qE '^(ok|FAIL|---)'; then echo "$out" | tail -20; f=$((f+1)); fi
  # A failure outside the op subtests (coverage, TF itself) counts too.
  if echo "$out" | grep -qE '^--- FAIL: TestConformance' && [ "$f" -eq 0 ]; then
    echo "$out" | grep -E 'kerneltest.go' | tail -5; f=1
  fi
  echo "kernels: $p op families pass, $f fail"
  pass=$((pass+p)); fail=$((fail+f))
}

# Gradients: package grad's graphs, their TF_AddGradients-built gradients
# against tf.gradients on the same GraphDef; one count per graph.
part_grads() {
  local out p f
  out=$(cd "$repo" && KERNELTEST_TF=$MS_PY go test ./grad -run '^TestAgainstTF$' -count=1 -v 2>&1)
  echo "$out" | grep -E 'grad_test\.go:[0-9]+: |--- FAIL' | sed 's/^ *//'
  p=$(echo "$out" | grep -cE '^\s+--- PASS: TestAgainstTF/')
  f=$(echo "$out" | grep -cE '^\s+--- FAIL: TestAgainstTF/')
  if ! echo "$out" | grep -qE '^(ok|FAIL)'; then echo "$out" | tail -20; f=$((f+1)); fi
  echo "grads: $p graphs agree with TF, $f differ"
  pass=$((pass+p)); fail=$((fail+f))
}

part_graphs() {
  local fuzz=${TFORACLE_FUZZ:-100} seed=${TFORACLE_SEED:-1} key dir out last p f
  (cd "$repo" && go run ./test/tforacle/pbtxt2pb examples/data/model_test.pbtxt "$tmp/model_test.pb" &&
    go run ./bench/models/gen -out "$tmp/bench" >/dev/null) || { fail=$((fail+1)); return; }
  key=$(cat "$here/gen.py" "$repo/test/models/reference.py" "$tmp/model_test.pb" "$tmp/bench"/*.pb \
    "$repo"/bench/cpu/models.py \
    <(echo "$fuzz $seed") | sha256sum | cut -c1-24)
  dir=$cache/plans-$key
  if [ ! -f "$dir/ORDER" ]; then
    rm -rf "$cache"/plans-*
    if ! "$MS_PY" "$here/gen.py" "$dir.tmp" --fuzz "$fuzz" --seed "$seed" \
        --model-test "$tmp/model_test.pb" --bench "$tmp/bench"; then
      echo "FAIL gen.py"; fail=$((fail+1)); return
    fi
    mv "$dir.tmp" "$dir"
    # Plans name their data files by path: point them at the final folder.
    sed -i "s|$dir.tmp/|$dir/|g" "$dir"/*.plan
  else
    echo "graphs: plans cached in $dir"
  fi
  gcc -O1 -Wall -Werror -std=c11 -D_POSIX_C_SOURCE=200809L -I "$repo/include" \
    "$repo/test/models/runner.c" -o "$tmp/runner" -L "$repo/build" -ltensorflow \
    -Wl,-rpath,"$repo/build" -lm || { fail=$((fail+1)); return; }
  out=$("$tmp/runner" "$dir" 2>&1); echo "$out" | sed '$d'
  last=$(echo "$out" | tail -1)
  if ms_result "$last"; then
    pass=$((pass+ms_p)); fail=$((fail+ms_f)); xfail=$((xfail+ms_x))
  else
    echo "FAIL runner: no result line (crashed?)"; fail=$((fail+1))
  fi
}

for part in ${TFORACLE_PARTS:-kernels grads graphs}; do
  t0=$(date +%s)
  "part_$part"
  echo "-- $part: $(( $(date +%s) - t0 )) s"
done
ms_result_line $pass $fail 0 $xfail
[ $fail -eq 0 ]
