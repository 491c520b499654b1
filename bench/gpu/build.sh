#!/bin/sh
# Builds, here (Go, no CUDA needed), the GPU test artefacts that run on a GPU
# machine without Go: the test binaries of device/cuda and kernels/cuda and
# the script that runs them (gputest.sh), into DIR (default .dev/gpu, which
# git ignores). Carry DIR to the GPU machine and run, from the repo root:
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
cp bench/gpu/gputest.sh "$DIR/"
ls -la "$DIR"
