#!/bin/sh
# One point's tail, request by request: a closed-loop client of
# bench/cpu/vs_tf.sh (its clients and models, build/vs_tf) runs one model
# at one batch size and one client thread for DUR seconds, writing every
# request's start and latency (LAT_DUMP, bench/gpu/closedloop.h), under
# `perf record -a` of the scheduler's switches and the signals delivered,
# on CLOCK_MONOTONIC; then bench/cpu/tail.py says which slow requests had
# a signal delivered to the client thread, that thread or the library's
# workers off their CPUs, or none of these, and what took the client
# thread's CPU.
#
#   bench/cpu/tail.sh ms cnn            # mstream, cnn, B=1, 3 s
#   B=16 DUR=5 bench/cpu/tail.sh ort keras_cnn
#
# SIDE is ms, tf, ort or ov. The client warms up WARM seconds first (2, as
# vs_tf.sh's table). Needs perf with the sched and signal tracepoints
# (root, or kernel.perf_event_paranoid <= -1) and a vs_tf.sh run before it.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
[ $# -ge 2 ] || { sed -n '2,17p' "$0" >&2; exit 2; }
side=$1 model=$2
B=${B:-1} DUR=${DUR:-3}
out=build/vs_tf m=build/vs_tf/models p=build/vs_tf/peers
[ -x "$out/loadgen_$side" ] || { echo "tail.sh: no $out/loadgen_$side: run bench/cpu/vs_tf.sh first" >&2; exit 1; }
command -v perf >/dev/null || { echo "tail.sh: no perf" >&2; exit 1; }
ms_root=$root
. scripts/venv.sh
. bench/cpu/points.sh
model_point "$model"
intra=$(cfg_intra)
client_cmd "$side" "$B" 1 "$DUR" || { echo "tail.sh: side $side: ms, tf, ort or ov" >&2; exit 2; }
t=$out/tail
mkdir -p "$t"
echo "tail.sh: $side $model B=$B, $DUR s; cores' round trip $("$out/corelat") ns" >&2
IDS_MAX=$ids LAT_DUMP=$t/lat WARM_S=${WARM:-2} TF_CPP_MIN_LOG_LEVEL=2 \
  perf record -q -a -k CLOCK_MONOTONIC -e sched:sched_switch -e signal:signal_deliver -o "$t/perf.data" -- $run 2>"$t/err" |
  grep -v '"stats"' || { echo "tail.sh: the client failed: $(tail -3 "$t/err")" >&2; exit 1; }
perf script -i "$t/perf.data" -F comm,tid,cpu,time,event,trace >"$t/sched.txt" 2>/dev/null
"$MS_PY" bench/cpu/tail.py "$t/lat.$B.1" "$t/sched.txt"
