#!/bin/bash
# The GPU benchmark of issue 5, run on the GPU machine from the folder that
# bench/gpu/package.sh filled (library, loadgen, gen, this script):
#
#   OUT=/tmp/out bash run.sh
#
# For each model and configuration it runs loadgen over BATCHES x THREADS,
# REPEATS times, with nvidia-smi sampling utilisation and memory beside it;
# then the PyTorch peer (PEERS=path/to/peers_torch.py) in the same run, and
# report.py prints the table with ratios. Environment (defaults):
#   MODELS=mlp,dlrm_small,model_test  BATCHES=1,16,64,256  THREADS=1,4,8,16
#   DUR=0.5  REPEATS=3  CONFIGS="g1 g4 g8 g16 g4m g4a g1ng g4ng g4ang"  PEERS=  PEER_DUR=0.5
# A configuration name is g<N> (N groups), plus m (TF_GPU_STREAM_MERGE), a
# (TF_GPU_STREAM_AWARE_BFC), ng (MSTREAM_CUDA_GRAPH=0: no CUDA graphs, which
# are on by default: NVIDIA's feature set), cg (MSTREAM_CUDA_GRAPH=1, for
# libraries from before graphs were the default) and/or p
# (MSTREAM_GPU_POOL: N groups on every visible GPU, each Run on the
# least-loaded of all; without p the model runs on GPU:0 alone, as in
# TF); g16 also sets CUDA_DEVICE_MAX_CONNECTIONS=32. nvidia-smi samples
# carry timestamps and loadgen's points their wall-clock window, so
# report.py gives utilisation and memory per point.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${OUT:-$HERE/out}
mkdir -p "$OUT" /tmp/mstream_models
MODELS=${MODELS:-mlp,dlrm_small,model_test}
BATCHES=${BATCHES:-1,16,64,256}
THREADS=${THREADS:-1,4,8,16}
DUR=${DUR:-0.5}
REPEATS=${REPEATS:-3}
CONFIGS=${CONFIGS:-"g1 g4 g8 g16 g4m g4a g1ng g4ng g4ang"}
RES=$OUT/ours.jsonl
: >"$RES"
[ -f /tmp/mstream_models/dlrm_small.pb ] || "$HERE/gen" -out /tmp/mstream_models >&2
for m in ${MODELS//,/ }; do
  case $m in
    model_test) model=$HERE/model_test.pbtxt; ids=200 ;;
    *) model=/tmp/mstream_models/$m.pb; ids=100000 ;;
  esac
  for cfg in $CONFIGS; do
    n=${cfg#g}; n=${n%%[a-z]*}
    merge=false; aware=false; graph=; pool=false; conns=
    case $cfg in *m*) merge=true ;; esac
    case $cfg in *a*) aware=true ;; esac
    case $cfg in *cg*) graph=1 ;; *ng*) graph=0 ;; esac
    case $cfg in *p*) pool=true ;; esac
    [ "$n" -ge 16 ] && conns=32
    for rep in $(seq 1 "$REPEATS"); do
      log=$OUT/smi_${m}_${cfg}_$rep.csv
      nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv,noheader,nounits -lms 100 >"$log" 2>/dev/null &
      smi=$!
      env TF_GPU_STREAM_GROUP_COUNT=$n TF_GPU_STREAM_MERGE=$merge TF_GPU_STREAM_AWARE_BFC=$aware ${graph:+MSTREAM_CUDA_GRAPH=$graph} MSTREAM_GPU_POOL=$pool \
        ${conns:+CUDA_DEVICE_MAX_CONNECTIONS=$conns} IDS_MAX=$ids \
        "$HERE/loadgen" "$model" "$BATCHES" "$THREADS" "$DUR" 2>>"$OUT/loadgen.err" |
        python3 -c '
import json, sys
m, cfg, rep = sys.argv[1:4]
for line in sys.stdin:
    r = json.loads(line)
    r.update(model=m, config=cfg, repeat=int(rep))
    print(json.dumps(r))' "$m" "$cfg" "$rep" >>"$RES"
      kill $smi 2>/dev/null; wait $smi 2>/dev/null
    done
  done
done
if [ -n "${PEERS:-}" ]; then
  DUR=${PEER_DUR:-0.5} BATCHES=$BATCHES THREADS=$THREADS OUT=$OUT python3 "$PEERS" >"$OUT/peers.log" 2>&1
fi
python3 "$HERE/report.py" "$OUT" | tee "$OUT/table.md"
