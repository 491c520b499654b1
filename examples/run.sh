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
batch=${1:-16}
iters=${2:-200}
threads=${3:-2}
exec build/multistream_inference examples/data/model_test.pbtxt \
  5 dense ids_0 ids_1 ids_2 ids_3 1 output "$batch" "$iters" "$threads" \
  examples/data/config_proto
