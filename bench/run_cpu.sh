#!/bin/sh
# CPU benchmarks of build/libmstream.so through the TF C API; prints a
# Markdown table. Usage: bench/run_cpu.sh   (builds the library if needed)
# Knobs: RUNS (scalar graphs, default 200), MM_RUNS (default 10),
#        EX_ITERS (example runs per thread, default 500).
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
[ -e build/libmstream.so ] || make -C "$root"
lib=-ltensorflow
[ -e build/libtensorflow.so ] || lib=-lmstream
${CC:-cc} -O2 -Wall -std=c11 -D_POSIX_C_SOURCE=200809L -I include \
  -I /usr/include/x86_64-linux-gnu bench/cpu/bench.c -o build/bench_cpu \
  -L build $lib -Wl,-rpath,'$ORIGIN' -lopenblas -lpthread
sh examples/build.sh >/dev/null

runs=${RUNS:-200}
mm_runs=${MM_RUNS:-10}
ex_iters=${EX_ITERS:-500}
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

build/bench_cpu chain 1000 "$runs" >>"$tmp"
build/bench_cpu wide 1000 "$runs" >>"$tmp"
build/bench_cpu matmul 1024 4 "$mm_runs" >>"$tmp"
build/multistream_inference examples/data/model_test.pbtxt \
  5 dense ids_0 ids_1 ids_2 ids_3 1 output 16 "$ex_iters" 2 \
  examples/data/config_proto >"$tmp.ex"
qps1=$(awk '/^single thread/{f=1} f&&/QPS/{print $2; exit}' "$tmp.ex")
lat1=$(awk '/^single thread/{f=1} f&&/latency/{print $4" / "$6" / "$8; exit}' "$tmp.ex")
qps2=$(awk '/^multi thread/{f=1} f&&/QPS/{print $2; exit}' "$tmp.ex")
lat2=$(awk '/^multi thread/{f=1} f&&/latency/{print $4" / "$6" / "$8; exit}' "$tmp.ex")
rm -f "$tmp.ex"

field() { awk -v k="$1" '$1==k{print $2; exit}' "$tmp"; }
detail() { awk -v k="$1" '$1==k{sub(/^[^(]*\(/,""); sub(/\)$/,""); print; exit}' "$tmp"; }

echo "CPU: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores; $(date -u +%Y-%m-%d)"
echo
echo "| Benchmark | Result | Detail |"
echo "| --- | --- | --- |"
echo "| Executor, chain of 1000 AddV2 (scalars) | $(field chain) us/node | $(detail chain) |"
echo "| Executor, 1000 independent AddV2 (targets) | $(field wide) us/node | $(detail wide) |"
echo "| MatMul graph, 4 x 1024x1024 float32 | $(field matmul) GFLOP/s | $(detail matmul) |"
echo "| Peer: OpenBLAS cblas_sgemm, same shapes | $(field sgemm) GFLOP/s | $(detail sgemm) |"
echo "| MatMul graph / sgemm | $(field ratio) % | same process, same run |"
echo "| Example, batch 16, 1 thread | $qps1 QPS | TP99 / TP95 / mean $lat1 ms, $ex_iters runs |"
echo "| Example, batch 16, 2 threads | $qps2 QPS | TP99 / TP95 / mean $lat2 ms, $ex_iters runs per thread |"
