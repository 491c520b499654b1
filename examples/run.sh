#!/bin/sh
# Builds the library if needed, builds the example and runs it on the bundled
# model: batch 16, 200 runs per phase and thread, 2 threads, bundled config.
# This is what `make run` calls. Extra arguments replace BATCH ITERS THREADS:
#   examples/run.sh 64 500 4
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ ! -e build/libmstream.so ]; then
  make -C "$root"
fi
sh examples/build.sh
# The library's GEMMs use the first of libopenblas.so.0, libopenblas.so and
# libblas.so.3 that the dynamic loader finds (kernels/cpu/blas), else its own
# Go kernel: say which, since that halves the example's throughput.
blas=""
for name in libopenblas.so.0 libopenblas.so libblas.so.3; do
  for dir in $(echo "${LD_LIBRARY_PATH:-}" | tr ':' ' '); do
    [ -e "$dir/$name" ] && { blas="$dir/$name"; break 2; }
  done
  blas=$({ ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null; } | awk -v n="$name" '$1 == n {print $NF; exit}')
  [ -n "$blas" ] && break
done
if [ -n "$blas" ]; then
  echo "BLAS: $blas"
else
  echo "BLAS: none found, GEMMs run on the built-in Go kernel (about half as fast): sh scripts/setup.sh installs libopenblas-dev"
fi
batch=${1:-16}
iters=${2:-200}
threads=${3:-2}
exec build/multistream_inference examples/data/model_test.pbtxt \
  5 dense ids_0 ids_1 ids_2 ids_3 1 output "$batch" "$iters" "$threads" \
  examples/data/config_proto
