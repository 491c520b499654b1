#!/bin/sh
# mstream next to real TensorFlow 2.15.1, ONNX Runtime and OpenVINO on the
# CPU: the same GraphDefs, the same thread settings (the ConfigProto's
# intra_op = inter_op = 2), the sides alternating model by model, ROUNDS
# times; the report takes each side's median per point, over the rounds of
# a vCPU placement every side met where there is one (report.py).
#
# Every library runs through the same closed-loop C client
# (bench/gpu/closedloop.h): bench/gpu/loadgen.c built twice, once linked to
# build/libmstream.so and once to TF's own C API from the pip wheel;
# bench/cpu/loadgen_ort.c on ONNX Runtime's C API (the GraphDefs converted by
# tf2onnx) and bench/cpu/loadgen_ov.c on OpenVINO's (its TensorFlow
# frontend's IR, f32), both from the wheels in build/peers-venv when
# bench/cpu/peers_setup.sh has made it (PEERS=0 skips them). Each library's
# Python client runs beside them (bench/cpu/peers.py: mstream's ctypes
# package, TF's Session, ORT's and OpenVINO's pybind11 APIs; PY=0 skips
# them), so that the Python clients' cost per call is measured, not mixed
# into the comparison of the engines.
#
#   bench/cpu/vs_tf.sh                 # every model, B 1,16,256, T 1,2, DUR=1 s
#   MODELS="mlp chain" DUR=2 ROUNDS=3 bench/cpu/vs_tf.sh
#   bench/cpu/vs_tf.sh --readme        # and write the tables into README.md
#
# Before and after each side's run it reads the cores' cache-line round trip
# (bench/cpu/corelat.c) into the point: the report marks the cells that ran
# with this VM's vCPUs far apart.
#
# Writes build/vs_tf/points.jsonl and run.json and prints the Markdown tables
# (bench/cpu/report.py). Needs scripts/setup.sh's build/venv with TF.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
ms_root=$root
MS_TF_DEFAULTS=1
. scripts/venv.sh
. bench/cpu/points.sh
ms_have_tf || exit 0
readme=
[ "${1:-}" = --readme ] && readme="--readme README.md"
DUR=${DUR:-1}
ROUNDS=${ROUNDS:-2}
# Each client process warms up WARM seconds before its first point
# (closedloop.h's WARM_S), every side alike: the windows then measure a
# server past its first seconds (mstream's Go heap faults its pages in over
# its first GC cycles: cnn B=1, one client, 7% of the first second's
# requests took 1.3x the median or more, 2% from the fourth on).
export WARM_S=${WARM:-2}
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
# The cores' cache-line round trip, read before and after each side's run
# (bench/cpu/corelat.c: this VM's vCPUs sit near or far apart by turns).
$cc -O2 -Wall -pthread bench/cpu/corelat.c -o "$out/corelat"

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

# The peers: their C clients, built against the libraries of the wheels in
# build/peers-venv (ONNX Runtime's C header, which its wheel lacks, from the
# Go module proxy: github.com/yalue/onnxruntime_go carries the header of ORT
# API version 24, which ORT 1.32's library serves; OpenVINO's wheel ships
# its C headers); their converted models (build/vs_tf/peers), converted again
# when a GraphDef changes.
sides="ms tf"
pv=build/peers-venv/bin/python
p=$out/peers
if [ "${PEERS:-1}" != 0 ] && [ -e build/peers-venv/.ok ]; then
  sides="ms tf ort ov"
  # The peers get cfg.pb's intra-op threads (TF and mstream read it).
  intra=$(cfg_intra)
  export INTRA=$intra
  ortpkg=$("$pv" -c 'import os, onnxruntime; print(os.path.dirname(onnxruntime.__file__))')
  ovpkg=$("$pv" -c 'import os, openvino; print(os.path.dirname(openvino.__file__))')
  ortinc=$(go mod download -json github.com/yalue/onnxruntime_go@v1.27.0 | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -e "$ortinc/onnxruntime_c_api.h" ] || { echo "vs_tf: no onnxruntime_c_api.h from the Go module proxy" >&2; exit 1; }
  mkdir -p "$out/ortlib" "$out/ovlib"
  ortso=$(ls "$ortpkg"/capi/libonnxruntime.so.1.* | head -1)
  ln -sf "$ortso" "$out/ortlib/libonnxruntime.so.1"
  ln -sf libonnxruntime.so.1 "$out/ortlib/libonnxruntime.so"
  ln -sf "$(ls "$ovpkg"/libs/libopenvino_c.so.* | head -1)" "$out/ovlib/libopenvino_c.so"
  $cc -O2 -Wall -I"$ortinc" bench/cpu/loadgen_ort.c -L"$out/ortlib" -lonnxruntime -lpthread \
    -Wl,-rpath,"$root/$out/ortlib" -o "$out/loadgen_ort"
  $cc -O2 -Wall -I"$ovpkg/include" bench/cpu/loadgen_ov.c -L"$out/ovlib" -lopenvino_c -lpthread \
    -Wl,-rpath,"$ovpkg/libs" -o "$out/loadgen_ov"
  "$pv" bench/cpu/peers.py convert "$m" "$p" $MODELS 2>"$out/err_convert" ||
    { echo "vs_tf: converting for the peers failed: $(tail -3 "$out/err_convert")" >&2; exit 1; }
  [ "${PY:-1}" = 0 ] || sides="$sides mspy tfpy ortpy ovpy"
else
  echo "vs_tf: no ONNX Runtime / OpenVINO side (bench/cpu/peers_setup.sh makes build/peers-venv)" >&2
fi

export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
conversion_failed() {
  cat "$1" >&2
  echo >&2
  return 1
}
pts=$out/points.jsonl
: >"$pts"
rm -f "$out"/out_*
load0=$(cut -d' ' -f1-3 /proc/loadavg)
echo "vs_tf: $(nproc) cores, load $load0, DUR=$DUR ROUNDS=$ROUNDS, sides $sides" >&2
r=1
while [ "$r" -le "$ROUNDS" ]; do
  for model in $MODELS; do
    model_point "$model"
    b=$BATCHES
    [ -z "$one" ] || b=1
    for side in $sides; do
      echo "vs_tf: round $r $model $side" >&2
      client_cmd "$side" "$b" "$THREADS" "$DUR" ||
        run="$pv bench/cpu/peers.py run $side $p $model $b $THREADS $DUR"
      # A model the converter failed on: that library's sides report why.
      case $side in ort | ortpy | ov | ovpy)
        [ -e "$p/$file.${side%py}.err" ] && run="conversion_failed $p/$file.${side%py}.err" ;;
      esac
      # The client's own status decides (not the pipeline's: grep's).
      lat0=$("$out/corelat")
      { IDS_MAX=$ids OUTPUT_DUMP="$out/out_${model}_$side" $run 2>"$out/err_${model}_$side"; echo $? >"$out/rc"; } |
        grep -v '"stats"' >"$out/side.jsonl" || true
      lat1=$("$out/corelat")
      sed "s/^{/{\"model\": \"$model\", \"side\": \"$side\", \"round\": $r, \"corelat_ns\": [$lat0, $lat1], /" \
        "$out/side.jsonl" >>"$pts"
      [ "$(cat "$out/rc")" = 0 ] ||
        echo "vs_tf: $model on $side failed: $(tail -1 "$out/err_${model}_$side")" >&2
    done
  done
  r=$((r + 1))
done

# What the report prints above its tables.
versions=$("$MS_PY" -c 'import tensorflow as tf; print("TF", tf.__version__)' 2>/dev/null)
case $sides in *ort*)
  versions=$("$pv" -c 'import onnxruntime, openvino, tf2onnx, onnx, tensorflow
print("TF", tensorflow.__version__, "- ONNX Runtime", onnxruntime.__version__, "- OpenVINO",
      openvino.__version__.split("-")[0], "- tf2onnx", tf2onnx.__version__, "(onnx", onnx.__version__ + ", opset 17)")' 2>/dev/null)
  ;;
esac
cat >"$out/run.json" <<EOF
{"date": "$(date -u '+%Y-%m-%d %H:%M UTC')", "commit": "$(git rev-parse --short HEAD 2>/dev/null)", "cores": $(nproc),
 "cpu": "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')", "load_before": "$load0",
 "load_after": "$(cut -d' ' -f1-3 /proc/loadavg)", "rounds": $ROUNDS, "dur": "$DUR", "warm": "$WARM_S", "versions": "$versions",
 "command": "MODELS=\"$MODELS\" BATCHES=$BATCHES THREADS=$THREADS ROUNDS=$ROUNDS DUR=$DUR WARM=$WARM_S bench/cpu/vs_tf.sh"}
EOF
"$MS_PY" bench/cpu/report.py $readme "$out"
