#!/bin/sh
# The CPU model benchmarks of the kernels issue: a small CNN and a 2-block
# transformer encoder (bench/models/gen), each at batch 1 and 16, through the
# C API with the closed-loop load generator (bench/gpu/loadgen.c):
# one client thread gives the latency, two the throughput on this machine.
#
#   bench/run_models.sh            # DUR=2 seconds per point
#
# Prints one JSON line per (model, batch, threads) point.
set -eu
cd "$(dirname "$0")/.."
DUR=${DUR:-2}
make lib >/dev/null
mkdir -p build/models
gcc -O2 -Wall -Iinclude bench/gpu/loadgen.c -Lbuild -lmstream -lpthread -Wl,-rpath,"$PWD/build" -o build/loadgen
go run ./bench/models/gen -out build/models >/dev/null
for m in cnn transformer; do
  build/loadgen "build/models/$m.pb" 1,16 1,2 "$DUR" | grep -v '"stats"' | sed "s/^{/{\"model\": \"$m\", /"
done
