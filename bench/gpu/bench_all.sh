#!/bin/bash
# The whole GPU benchmark in one device call (under 10 minutes on an H100):
# the PyTorch peer (peers_torch.py, bench/gpu's own, copied beside this
# script by package.sh), then ours over every model, batch, thread count and
# configuration (run.sh, 2 repeats of 0.2 s per point: CUDA graphs are on
# by default, and g1ng, g4ng, g4ang turn them off), then report.py (the
# table, and the DLRM-small B=16 plot when matplotlib is there: report.sh
# makes it wherever it runs). At most 150 s for the peer and 270 s for
# ours. On a host with two GPUs or more, the GPU pool's configs (g4p,
# g4ngp: 4 groups on every GPU, MSTREAM_GPU_POOL) join run.sh's, and
# report.py adds their rows next to the same configs on one GPU;
# POOL_ONLY=1 runs only those (g4 g4p g4ng g4ngp on the bundled model and
# DLRM-small, T up to 32, no peer: about 3 minutes).
#   OUT=/tmp/o bash bench_all.sh      (from the folder package.sh fills;
#   the nvidia-smi samples also land in $OUT/smi.tar.gz)
set -u
cd "$(dirname "$0")"
export OUT=${OUT:-/tmp/o}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/env.txt" 2>&1
ngpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | wc -l)
configs="g1 g4 g8 g16 g4m g4a g1ng g4ng g4ang"
[ "$ngpu" -ge 2 ] && configs="$configs g4p g4ngp"
if [ "${POOL_ONLY:-0}" = 1 ]; then
  [ "$ngpu" -ge 2 ] || { echo "POOL_ONLY=1 needs two GPUs, $ngpu visible" >&2; exit 1; }
  # T=32 too: on 2 x H200 the bundled model's best points were at T=16,
  # the most threads tried, for one GPU and for the pool alike.
  export MODELS=${MODELS:-model_test,dlrm_small} THREADS=${THREADS:-1,4,8,16,32}
  configs="g4 g4p g4ng g4ngp"
else
  t0=$(date +%s)
  BATCHES=1,16,64,256 THREADS=1,4,8,16 DUR=0.2 OUT=$OUT timeout 150 python3 peers_torch.py > "$OUT/peers.log" 2>&1
  echo "peers rc=$? $(( $(date +%s) - t0 ))s" >> "$OUT/times.txt"
fi
t0=$(date +%s)
CONFIGS=${CONFIGS:-$configs} DUR=0.2 REPEATS=${REPEATS:-2} timeout ${OURS_T:-270} bash run.sh > "$OUT/run.log" 2>&1
echo "ours rc=$? $(( $(date +%s) - t0 ))s" >> "$OUT/times.txt"
python3 report.py "$OUT" > "$OUT/table.md" 2>"$OUT/report.err"
echo "report rc=$?" >> "$OUT/times.txt"
# The nvidia-smi samples (one file per point) also go into one archive: the
# device tool brings back only a few files per call, and report.sh unpacks
# smi.tar.gz where the CSVs themselves did not come back.
ls "$OUT"/smi_*.csv >/dev/null 2>&1 && tar czf "$OUT/smi.tar.gz" -C "$OUT" $(cd "$OUT" && ls smi_*.csv)
