#!/bin/sh
# bench/data/run.sh: the tf.data prefetch benchmark (prefetch.py's
# docstring says what it measures), mstream and TF 2.15 on the same graphs;
# STEPS (default 40) timed steps per graph.
set -e
repo=$(cd "$(dirname "$0")/../.." && pwd)
[ -e "$repo/build/libmstream.so" ] || make -C "$repo" lib
ms_root=$repo; . "$repo/scripts/venv.sh"
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
"$MS_PY" "$repo/bench/data/prefetch.py" gen "$d" 2>/dev/null
MSTREAM_LIB="$repo/build/libmstream.so" "$MS_PY" "$repo/bench/data/prefetch.py" mstream "$d" "${STEPS:-40}"
TF_CPP_MIN_LOG_LEVEL=3 CUDA_VISIBLE_DEVICES= "$MS_PY" "$repo/bench/data/prefetch.py" tf "$d" "${STEPS:-40}"
