#!/bin/bash
# The whole GPU benchmark in one device call (under 10 minutes on an H100):
# the PyTorch peer (peers_torch.py, bench/gpu's own, copied beside this
# script by package.sh), then ours over every model, batch, thread count and
# configuration (run.sh, 2 repeats of 0.2 s per point: 3 no longer fit the
# device call once the CUDA-graph configs g1cg and g4cg joined), then
# report.py. At most 150 s for the peer and 270 s for ours.
#   OUT=/tmp/o bash bench_all.sh      (from the folder package.sh fills)
set -u
cd "$(dirname "$0")"
export OUT=${OUT:-/tmp/o}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/env.txt" 2>&1
t0=$(date +%s)
BATCHES=1,16,64,256 THREADS=1,4,8,16 DUR=0.2 OUT=$OUT timeout 150 python3 peers_torch.py > "$OUT/peers.log" 2>&1
echo "peers rc=$? $(( $(date +%s) - t0 ))s" >> "$OUT/times.txt"
t0=$(date +%s)
DUR=0.2 REPEATS=${REPEATS:-2} timeout ${OURS_T:-270} bash run.sh > "$OUT/run.log" 2>&1
echo "ours rc=$? $(( $(date +%s) - t0 ))s" >> "$OUT/times.txt"
python3 report.py "$OUT" > "$OUT/table.md" 2>"$OUT/report.err"
echo "report rc=$?" >> "$OUT/times.txt"
