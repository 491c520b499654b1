#!/bin/sh
# Builds, here (Go, no CUDA needed), the GPU test artefacts that run on a GPU
# machine without Go: the test binaries of device/cuda, kernels/cuda and
# session, the library with the example and the benchmark kit (DIR/bench,
# see package.sh), test/models' runner and plans (DIR/models) and the
# script that runs them (gputest.sh), into DIR
# (default .dev/gpu, which git ignores). Carry DIR to the GPU machine and run, from the repo root:
#
#   OUT=/some/folder bash .dev/gpu/gputest.sh
#
# (the `run` tool of the dev environment: carry [".dev/gpu"], command
# `bash .dev/gpu/gputest.sh`; $OUT comes back).
set -eu
cd "$(dirname "$0")/../.."
DIR=${1:-.dev/gpu}
mkdir -p "$DIR"
go test -c -ldflags='-s -w' -o "$DIR/device_cuda.test" ./device/cuda
go test -c -ldflags='-s -w' -o "$DIR/kernels_cuda.test" ./kernels/cuda
# The session's GPU tests (every multi-stream knob under the real driver,
# outputs against the CPU); run from session/ so they find the bundled model.
go test -c -ldflags='-s -w' -o "$DIR/session.test" ./session
# The library, loadgen and the model generator (bench/gpu/run.sh's kit), and
# the bundled example linked against the library as a user program is.
sh bench/gpu/package.sh "$DIR/bench" >/dev/null
${CC:-cc} -O2 -Wall -std=c11 -D_POSIX_C_SOURCE=200809L -Iinclude \
  examples/multistream_inference/multistream_inference.c -o "$DIR/bench/multistream_inference" \
  -L"$DIR/bench" -lmstream -Wl,-rpath,'$ORIGIN' -lpthread
cp examples/data/config_proto "$DIR/bench/"
cp bench/gpu/gputest.sh "$DIR/"
# test/models' field graphs for the GPU: the runner linked against the kit's
# library, and the plans (inputs and NumPy references) drawn here, paths
# made relative to the repo root (lstm_layer_inference's 32 MB input is
# left out to keep the kit small).
M=$DIR/models
rm -rf "$M" && mkdir -p "$M/plans"
P=$(mktemp -d)
/usr/bin/python3 test/models/reference.py "$P" >/dev/null
rm -f "$P"/lstm_layer_inference.* && sed -i '/^lstm_layer_inference$/d' "$P/ORDER"
sed -i "s#$(pwd)/#./#g; s#$P/#$M/plans/#g" "$P"/*.plan
cp "$P"/* "$M/plans/" && rm -rf "$P"
${CC:-cc} -O1 -std=c11 -D_POSIX_C_SOURCE=200809L -Iinclude test/models/runner.c -o "$M/runner" \
  -L"$DIR/bench" -lmstream -Wl,-rpath,'$ORIGIN/../bench' -lm
ls -la "$DIR"
