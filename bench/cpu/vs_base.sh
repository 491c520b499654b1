#!/bin/sh
# Before and after: another build of libmstream.so (BASE, the directory
# holding it, e.g. main's `make lib` in a checkout of its own), this
# checkout's build/libmstream.so and TF 2.15, alternating point by point
# through bench/cpu/vs_tf.sh's loadgen builds and models (run vs_tf.sh
# once first). Prints QPS, p50 / p99 latency and the process's CPU time per
# request over the window (loadgen's cpu_us_per_request: on a loaded
# machine wall time mostly measures the run queue), each the median over
# the rounds. Both mstream sides name their library through
# LD_LIBRARY_PATH: a loadgen copied from another checkout's build/vs_tf
# would otherwise run that checkout's build as "after".
#
#   BASE=/path/to/main/build MODELS="chain_noopt mlp" bench/cpu/vs_base.sh
#
# Knobs as vs_tf.sh: MODELS, BATCHES (1,16), THREADS (1,2), DUR (2), ROUNDS (2),
# WARM (0 here: seconds of warm-up before a process's first point).
# Each run's points carry the cores' cache-line round trip before and after
# it (build/vs_tf/corelat), and the medians are taken per placement of this
# VM's vCPUs, one table each, by report.py's rule (far: a reading of 150 ns
# or more): short runs of many rounds (DUR=0.5 ROUNDS=40) catch both
# placements, which change every few seconds to minutes.
# INTRA=n runs the models with TF's optimizations on under a ConfigProto of
# intra_op_parallelism_threads = n (inter_op 2) instead of cfg.pb's 2.
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
ms_root=$root
MS_TF_DEFAULTS=1
. scripts/venv.sh
. bench/cpu/points.sh
ms_have_tf || exit 0
: "${BASE:?BASE names the directory of the libmstream.so to compare with}"
out=build/vs_tf
m=$out/models
[ -x "$out/loadgen_ms" ] && [ -x "$out/loadgen_tf" ] && [ -x "$out/corelat" ] && [ -e "$m/.done" ] || { echo "vs_base: run bench/cpu/vs_tf.sh once first" >&2; exit 1; }
BATCHES=${BATCHES:-1,16}
THREADS=${THREADS:-1,2}
MODELS=${MODELS:-chain_noopt wide_noopt while1000 model_test mlp dlrm_small}
pts=$out/vs_base.jsonl
cfgopt=cfg.pb
if [ -n "${INTRA:-}" ]; then
  cfgopt=cfg_intra$INTRA.pb
  "$MS_PY" -c 'import sys, tensorflow as tf
c = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=int(sys.argv[1]), inter_op_parallelism_threads=2)
open(sys.argv[2], "wb").write(c.SerializeToString())' "$INTRA" "$m/$cfgopt"
fi
: >"$pts"
export TF_CPP_MIN_LOG_LEVEL=${TF_CPP_MIN_LOG_LEVEL:-2}
export WARM_S=${WARM:-0}
echo "vs_base: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
r=1
while [ "$r" -le "${ROUNDS:-2}" ]; do
  for model in $MODELS; do
    model_point "$model"
    [ "$cfg" != cfg.pb ] || cfg=$cfgopt
    b=$BATCHES
    [ -z "$one" ] || b=1
    for side in before after tf; do
      case $side in
        before) run="env LD_LIBRARY_PATH=$BASE $out/loadgen_ms" ;;
        after) run="env LD_LIBRARY_PATH=$root/build $out/loadgen_ms" ;;
        tf) run=$out/loadgen_tf ;;
      esac
      lat0=$("$out/corelat")
      IDS_MAX=$ids $run "$m/$file.pb" "$b" "$THREADS" "${DUR:-2}" "$m/$cfg" 2>/dev/null | grep -v '"stats"' >"$out/vs_base.side" ||
        echo "vs_base: $model on $side failed" >&2
      lat1=$("$out/corelat")
      sed "s/^{/{\"model\": \"$model\", \"side\": \"$side\", \"round\": $r, \"corelat_ns\": [$lat0, $lat1], /" \
        "$out/vs_base.side" >>"$pts"
    done
  done
  r=$((r + 1))
done
echo "vs_base: load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
"$MS_PY" - "$pts" <<'PY'
import collections, json, statistics, sys
sys.path.insert(0, "bench/cpu")
from report import far  # the placement rule of vs_tf.sh's table
by, order = collections.defaultdict(list), []
for line in open(sys.argv[1]):
    p = json.loads(line)
    k = ("far" if far(p) else "near", p["model"], p["batch"], p["threads"])
    if k not in order:
        order.append(k)
    by[k + (p["side"],)].append(p)
order.sort(key=lambda k: k[0] != "near")
def us(x):
    # Tenths below 100 us: a small model's change is a fraction of a microsecond.
    return f"{x:.1f}" if x < 100 else f"{x:.0f}"
def med(k, side, field):
    v = [p[field] for p in by[k + (side,)]]
    return statistics.median(v) if v else float("nan")
sides = ("before", "after", "tf")
last = None
for k in order:
    if k[0] != last:
        last = k[0]
        runs = sum(len(by[q + (s,)]) for q in order if q[0] == last for s in sides)
        print(f"\nvCPUs {last} ({runs} points)\n")
        print("| model | B | T | QPS before / after / TF | after / TF QPS | p50 ms before / after / TF "
              "| p99 ms before / after / TF | CPU us per request before / after / TF | after / TF CPU |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    q, c = [med(k, s, "qps") for s in sides], [med(k, s, "cpu_us_per_request") for s in sides]
    p50 = " / ".join(f"{med(k, s, 'p50_ms'):.3f}" for s in sides)
    p99 = " / ".join(f"{med(k, s, 'p99_ms'):.2f}" for s in sides)
    print(f"| {k[1]} | {k[2]} | {k[3]} | {q[0]:.0f} / {q[1]:.0f} / {q[2]:.0f} | {q[1] / q[2]:.2f} | {p50} | {p99} "
          f"| {' / '.join(us(x) for x in c)} | {c[1] / c[2]:.2f} |")
PY
