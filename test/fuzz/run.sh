#!/bin/bash
# Builds graph_fuzz.c with libFuzzer (clang -fsanitize=fuzzer) and runs it:
# first over the corpus in test/fuzz/corpus (every input once) against
# build/libmstream.so, the library users get, then mutating it for
# FUZZ_SECONDS (default 30) in a scratch copy, so new inputs never land in
# the repository. The mutation run links the library's Go code built with
# libFuzzer's coverage instrumentation (go build -buildmode=c-archive
# -tags=libfuzzer -gcflags=all=-d=libfuzzer, into build/fuzz/): the search is
# coverage-guided through the Go code, not only the harness (a c-shared
# build cannot carry the instrumentation: its calls into libFuzzer are
# non-PIC relocations). A crash, abort, timeout or RSS blow-up fails the
# suite; the input that caused it is kept in build/fuzz/ and named in the
# output. Last line: "N passed, M failed".
#   test/fuzz/run.sh               the corpus, then 30 s of mutations
#   FUZZ_SECONDS=600 test/fuzz/run.sh
#   test/fuzz/run.sh build/fuzz/crash-...   replay one input
# An RSS blow-up in the mutation run: MSTREAM_FUZZ_HEAP_PROFILE=path makes
# the instrumented build write its Go heap profile there every 5 s
# (capi/heapprof_libfuzzer.go; go tool pprof -sample_index=inuse_space
# -top build/fuzz/graph_fuzz_cov path), and GODEBUG=gctrace=1 prints the
# live heap after each collection.
repo=$(cd "$(dirname "$0")/../.." && pwd)
out=$repo/build/fuzz
mkdir -p "$out"
if ! command -v clang >/dev/null; then
  echo "skipped: no clang"; echo "0 passed, 0 failed, 1 skipped"; exit 0
fi
if ! clang -g -O1 -fsanitize=fuzzer -I "$repo/include" -o "$out/graph_fuzz" "$repo/test/fuzz/graph_fuzz.c" \
    -L "$repo/build" -lmstream -Wl,-rpath,"$repo/build" -Wall -Werror; then
  echo "FAIL graph_fuzz: does not build"; echo "0 passed, 1 failed"; exit 1
fi
echo "building the instrumented library (go build -buildmode=c-archive -gcflags=all=-d=libfuzzer; minutes the first time)"
if ! (cd "$repo" && go build -buildmode=c-archive -trimpath -tags=libfuzzer -gcflags=all=-d=libfuzzer \
      -o "$out/libmstream_cov.a" ./capi) ||
   ! clang -g -O1 -fsanitize=fuzzer -I "$repo/include" -o "$out/graph_fuzz_cov" "$repo/test/fuzz/graph_fuzz.c" \
      "$out/libmstream_cov.a" -lpthread -ldl -lm -Wall -Werror; then
  echo "FAIL graph_fuzz_cov: the instrumented harness does not build"; echo "0 passed, 1 failed"; exit 1
fi
rm -f "$out/libmstream_cov.h"
# The Go runtime owns SIGSEGV and friends (it turns them into panics, which
# the library recovers into TF_INTERNAL); libFuzzer must not take them over.
opts=(-handle_segv=0 -handle_bus=0 -handle_ill=0 -handle_fpe=0 -handle_abrt=1
      -timeout=30 -rss_limit_mb=4096 -artifact_prefix="$out/" -print_final_stats=1)
if [ $# -gt 0 ]; then
  "$out/graph_fuzz" "${opts[@]}" "$@"; exit
fi
pass=0; fail=0
if "$out/graph_fuzz" "${opts[@]}" -runs=0 "$repo/test/fuzz/corpus" >"$out/corpus.log" 2>&1; then
  pass=$((pass+1)); echo "corpus: $(ls "$repo/test/fuzz/corpus" | wc -l) inputs, no crash"
else
  fail=$((fail+1)); echo "FAIL corpus:"; grep -v '^mstream ' "$out/corpus.log" | tail -30
fi
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cp "$repo"/test/fuzz/corpus/* "$work/"
secs=${FUZZ_SECONDS:-30}
if "$out/graph_fuzz_cov" "${opts[@]}" -max_total_time="$secs" -seed="${FUZZ_SEED:-0}" "$work" >"$out/fuzz.log" 2>&1; then
  pass=$((pass+1))
  echo "fuzz: $(grep -o 'stat::number_of_executed_units: [0-9]*' "$out/fuzz.log" | grep -o '[0-9]*$') executions in ${secs}s, no crash;" \
    "coverage $(grep -o 'DONE *cov: [0-9]*' "$out/fuzz.log" | grep -o '[0-9]*$') edges, corpus $(ls "$work" | wc -l) inputs"
else
  fail=$((fail+1)); echo "FAIL fuzz (log: build/fuzz/fuzz.log):"; grep -v '^mstream ' "$out/fuzz.log" | tail -40
fi
echo "$pass passed, $fail failed"
