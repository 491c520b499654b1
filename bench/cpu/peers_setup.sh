#!/bin/sh
# Makes build/peers-venv: ONNX Runtime, OpenVINO and tf2onnx, the CPU
# benchmark's other peers (bench/cpu/vs_tf.sh runs them when it finds this
# venv). Not part of scripts/setup.sh or the test suite: only the benchmark
# needs them, and they are large (about 150 MB).
#
#   bench/cpu/peers_setup.sh      # once; again only when the pins below change
#
# The venv sees build/venv's site-packages through a .pth file (tf2onnx and
# the TF-Python side import TensorFlow 2.15.1 from there), and pip is held to
# build/venv's numpy, protobuf and ml_dtypes so that nothing here shadows
# them. onnx is pinned: with those held, pip resolves onnx 1.19.0, which
# declares ml_dtypes without a lower bound but needs ml_dtypes >= 0.5
# (float4_e2m1fn) and fails to import beside TF 2.15's 0.3.2; 1.18.0 imports.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
ms_root=$root
MS_TF_DEFAULTS=1
. scripts/venv.sh
ms_have_tf || exit 1
pins="onnx==1.18.0 tf2onnx==1.17.0 onnxruntime==1.32.0 openvino==2026.4.1"
v=build/peers-venv
tfsite=$("$MS_PY" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
held=$("$MS_PY" - <<'PY'
from importlib.metadata import version
print(" ".join(f"{p}=={version(p)}" for p in ("numpy", "protobuf", "ml_dtypes")))
PY
)
want="$pins $held $tfsite"
[ "$(cat "$v/.ok" 2>/dev/null)" = "$want" ] && exit 0
rm -rf "$v"
"$MS_PY" -m venv "$v"
site=$("$v/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
echo "$tfsite" >"$site/tf_venv.pth"
printf '%s\n' $held >"$v/constraints.txt"
"$v/bin/python" -m pip install -q --disable-pip-version-check -c "$v/constraints.txt" $pins
TF_CPP_MIN_LOG_LEVEL=2 "$v/bin/python" -c '
import tensorflow, onnx, onnxruntime, openvino, tf2onnx
print("peers_setup: TF", tensorflow.__version__, "onnx", onnx.__version__, "onnxruntime",
      onnxruntime.__version__, "openvino", openvino.__version__, "tf2onnx", tf2onnx.__version__)'
echo "$want" >"$v/.ok"
