#!/bin/sh
# mstream next to real TensorFlow 2.15.1 on the CPU: the same GraphDefs, the
# same closed-loop C client (bench/gpu/loadgen.c, built twice: once linked to
# build/libmstream.so, once to TF's own C API from the pip wheel), the same
# ConfigProto (intra_op = inter_op = 2), the two libraries alternating model by
# model, ROUNDS times; the report takes each side's median per point.
#
#   bench/cpu/vs_tf.sh                 # every model, B 1,16,256, T 1,2, DUR=1 s
#   MODELS="mlp chain" DUR=2 ROUNDS=3 bench/cpu/vs_tf.sh
#
# Writes build/vs_tf/points.jsonl and prints the Markdown table
# (bench/cpu/report.py). Needs scripts/setup.sh's build/venv with TF.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
ms_root=$root
. scripts/venv.sh
ms_have_tf || exit 0
DUR=${DUR:-1}
ROUNDS=${ROUNDS:-2}
BATCHES=${BATCHES:-1,16,256}
THREADS=${THREADS:-1,2}
MODELS=${MODELS:-model_test mlp dlrm_small cnn transformer keras_mlp keras_cnn keras_encoder chain chain_noopt wide wide_noopt while1000}
out=build/vs_tf
mkdir -p "$out"
make -s lib >/dev/null

tfdir=$("$MS_PY" -c 'import os, tensorflow as tf; print(os.path.dirname(tf.__file__))' 2>/dev/null)
mkdir -p "$out/tflib"
ln -sf "$tfdir/libtensorflow_cc.so.2" "$out/tflib/libtensorflow.so"
cc=${CC:-cc}
$cc -O2 -Wall -Iinclude bench/gpu/loadgen.c -Lbuild -lmstream -lpthread \
  -Wl,-rpath,"$root/build" -o "$out/loadgen_ms"
$cc -O2 -Wall -Iinclude bench/gpu/loadgen.c -L"$out/tflib" -ltensorflow -lpthread \
  -Wl,-rpath,"$out/tflib" -Wl,-rpath,"$tfdir" -o "$out/loadgen_tf"

# Models: written once, kept between runs, written again when a generator
# changes (.done holds their hash).
m=$out/models
gens=$(cat bench/cpu/models.py test/tforacle/pbtxt2pb/*.go bench/gpu/gen/*.go bench/models/gen/*.go bench/internal/models/*.go | sha256sum | cut -c1-16)
if [ "$(cat "$m/.done" 2>/dev/null)" != "$gens" ]; then
  rm -rf "$m"
  mkdir -p "$m"
  go run ./bench/gpu/gen -out "$m" -rows 100000 >&2
  go run ./bench/models/gen -out "$m" >&2
  "$MS_PY" bench/cpu/models.py "$m"
  # The bundled model made binary by the parser test/tforacle uses too.
  go run ./test/tforacle/pbtxt2pb examples/data/model_test.pbtxt "$m/model_test.pb"
  echo "$gens" >"$m/.done"
fi

export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
pts=$out/points.jsonl
: >"$pts"
echo "vs_tf: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), DUR=$DUR ROUNDS=$ROUNDS" >&2
r=1
while [ "$r" -le "$ROUNDS" ]; do
  for model in $MODELS; do
    file=$model cfg=cfg.pb b=$BATCHES
    case $model in
      *_noopt) file=${model%_noopt} cfg=cfg_noopt.pb ;;
    esac
    case $file in chain | wide | while1000) b=1 ;; esac
    ids=100000 # below every table's rows: the bundled model's smallest has 200
    [ "$file" = model_test ] && ids=200
    for side in ms tf; do
      echo "vs_tf: round $r $model $side" >&2
      IDS_MAX=$ids OUTPUT_DUMP="$out/out_${model}_$side" "$out/loadgen_$side" "$m/$file.pb" "$b" "$THREADS" "$DUR" "$m/$cfg" 2>"$out/err_${model}_$side" |
        grep -v '"stats"' | sed "s/^{/{\"model\": \"$model\", \"side\": \"$side\", \"round\": $r, /" >>"$pts" ||
        { echo "vs_tf: $model on $side failed: $(tail -1 "$out/err_${model}_$side")" >&2; }
    done
  done
  r=$((r + 1))
done
"$MS_PY" bench/cpu/report.py "$pts" "$out"
