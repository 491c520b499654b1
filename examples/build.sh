#!/bin/sh
# Builds build/multistream_inference and build/multistream_training against
# build/libtensorflow.so (our libmstream.so), exactly as a user program links
# TensorFlow's C library.
# Usage: examples/build.sh            (run from anywhere; needs `make` first)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
if [ ! -e build/libtensorflow.so ] && [ ! -e build/libmstream.so ]; then
  echo "examples/build.sh: build/libmstream.so is missing; run 'make' first" >&2
  exit 1
fi
lib=-ltensorflow
[ -e build/libtensorflow.so ] || lib=-lmstream
for prog in multistream_inference multistream_training; do
  ${CC:-cc} -O2 -g -Wall -Wextra -std=c11 -D_POSIX_C_SOURCE=200809L \
    -I include examples/$prog/$prog.c \
    -o build/$prog \
    -L build $lib -Wl,-rpath,'$ORIGIN' -lpthread -lm
  echo "built build/$prog"
done
