#!/bin/bash
# A/B of several builds of libmstream.so on one GPU host (different H100
# hosts differ by more than most changes; compare builds in one call).
# Kit layout (the folder bench/gpu/build.sh fills, default .dev/gpu):
#   DIR/bench                      the kit of package.sh (its library is the default build)
#   DIR/ab/<name>/libmstream.so    each other build's library (make lib in a checkout of it)
#   DIR/ab.sh                      this script (copy it there)
# On the GPU machine:  OUT=/tmp/o bash DIR/ab.sh name1 name2 ...
# Each build gets a copy of the kit with its library; PASSES (2) passes, the
# builds alternating within each: training.sh (TRAIN=1; ROUNDS, STEPS) and
# run.sh (DLRM=1; MODELS, CONFIGS, BATCHES, THREADS). Results in $OUT/ab.tgz
# (one file: the device tool returns only a few files per call).
set -u
D=$(cd "$(dirname "$0")" && pwd)
export MSTREAM_CACHE_DIR=/tmp/mstream-cache
O=$OUT/ab; mkdir -p $O
nvidia-smi -L > $O/smi.txt 2>&1
builds="$*"
for b in $builds; do rm -rf /tmp/k_$b; cp -r $D/bench /tmp/k_$b; [ -f $D/ab/$b/libmstream.so ] && cp $D/ab/$b/libmstream.so /tmp/k_$b/; done
first=${builds%% *}
mkdir -p /tmp/mstream_models; /tmp/k_$first/gen -models mlp,dlrm_small -out /tmp/mstream_models > /dev/null 2>&1
# warm the NVRTC cache once per build
for b in $builds; do ROUNDS=1 STEPS=20 timeout 120 bash /tmp/k_$b/training.sh > /dev/null 2>&1; done
for pass in $(seq 1 ${PASSES:-2}); do
  for b in $builds; do
    if [ "${TRAIN:-1}" = 1 ]; then
      t0=$(date +%s); ROUNDS=${ROUNDS:-3} STEPS=${STEPS:-150} timeout 200 bash /tmp/k_$b/training.sh > $O/train_${b}_$pass.md 2> $O/train_${b}_$pass.err
      echo "train $b pass $pass rc=$? $(( $(date +%s) - t0 ))s" >> $O/times.txt
    fi
    if [ "${DLRM:-1}" = 1 ]; then
      t0=$(date +%s); (cd /tmp/k_$b && MODELS=${MODELS:-dlrm_small,mlp} CONFIGS="${CONFIGS:-g1ng g4ng}" BATCHES=${BATCHES:-1,16,64} THREADS=${THREADS:-1,8} DUR=0.3 REPEATS=1 OUT=$O/run_${b}_$pass timeout 200 bash run.sh > $O/run_${b}_$pass.log 2>&1)
      echo "run $b pass $pass rc=$? $(( $(date +%s) - t0 ))s" >> $O/times.txt
      rm -f $O/run_${b}_$pass/smi_*.csv
    fi
  done
done
cd $OUT && tar czf ab.tgz ab && rm -rf ab
