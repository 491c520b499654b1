#!/bin/sh
# Builds, on a machine with Go, everything the GPU benchmark runs on a GPU
# machine that has no Go: the library, the load generator and a static model
# generator and the PyTorch peers, the training example and its benchmark, into DIR (default .dev/gpu/bench). Carry
# DIR to the GPU machine.
set -eu
cd "$(dirname "$0")/../.."
DIR=${1:-.dev/gpu/bench}
make lib >/dev/null
mkdir -p "$DIR"
cp build/libmstream.so "$DIR/"
ln -sf libmstream.so "$DIR/libtensorflow.so.2"
gcc -O2 -Wall -Iinclude bench/gpu/loadgen.c -L"$DIR" -lmstream -lpthread \
  -Wl,-rpath,'$ORIGIN' -o "$DIR/loadgen"
CGO_ENABLED=0 go build -trimpath -o "$DIR/gen" ./bench/gpu/gen
cp bench/gpu/run.sh bench/gpu/bench_all.sh bench/gpu/report.py examples/data/model_test.pbtxt "$DIR/"
cp bench/gpu/peers_torch.py "$DIR/"
# The training benchmark (training.sh): the example linked against the
# kit's library, its model, and the PyTorch peer of it.
gcc -O2 -Wall -std=c11 -D_POSIX_C_SOURCE=200809L -Iinclude \
  examples/multistream_training/multistream_training.c -L"$DIR" -lmstream \
  -Wl,-rpath,'$ORIGIN' -lm -o "$DIR/multistream_training"
cp bench/gpu/training.sh bench/gpu/peer_training_torch.py examples/data/training.pbtxt "$DIR/"
echo "packaged into $DIR"
