#!/bin/sh
# Steps/s of the training example (examples/multistream_training) in
# node-level mode with 1, 2 and 4 stream groups: "manual" puts towers on
# groups with a TF_STREAM_FROM_FILE file (4 groups: a tower each; 2 groups:
# towers 0,2 and 1,3), "auto" lets MSTREAM_STREAM_ASSIGN=auto assign every
# node. Each configuration runs ROUNDS times (default 3) for STEPS steps
# (default 100) of BATCH examples (default 256); the table gives the median
# steps/s (the example's own count: every step but the first) and the last
# loss, which must agree across configurations. On a GPU, "launch us/step" is
# the host time a timed step took to enqueue its device work (the example's
# "device launch:" line, last round; the first step, which compiles, not
# counted): near 1e6 / steps/s, the launching goroutine sets the pace.
#
#   sh bench/gpu/training.sh                 # here (CPU), after make
#   bash DIR/training.sh                     # in the GPU kit (bench/gpu/package.sh DIR)
#
# On the H100 (the kit carried as .dev/gpu/bench), with the PyTorch peer of
# the same model (one stream, and a stream per tower) after it:
#   bash .dev/gpu/bench/training.sh && OUT=$OUT python3 .dev/gpu/bench/peer_training_torch.py
#
# BIN, MODEL default to build/multistream_training and
# examples/data/training.pbtxt, or to the kit's copies beside this script.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
if [ -x "$here/multistream_training" ]; then
  BIN=${BIN:-$here/multistream_training}
  MODEL=${MODEL:-$here/training.pbtxt}
else
  BIN=${BIN:-build/multistream_training}
  MODEL=${MODEL:-examples/data/training.pbtxt}
fi
STEPS=${STEPS:-100}
BATCH=${BATCH:-256}
ROUNDS=${ROUNDS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '0:.*tower[02]/.*\n1:.*tower[13]/.*\n' >"$tmp/two.txt"
printf '0:.*tower0/.*\n1:.*tower1/.*\n2:.*tower2/.*\n3:.*tower3/.*\n' >"$tmp/four.txt"
echo "# $BIN $MODEL: $STEPS steps of batch $BATCH, median of $ROUNDS"
echo "| config | groups | assignment | steps/s | examples/s | last loss | launch us/step |"
echo "| --- | ---: | --- | ---: | ---: | ---: | ---: |"
for cfg in g1 g2 g2auto g4 g4auto; do
  case $cfg in
    g1) env="TF_NODE_LEVEL_MULTISTREAM=false"; groups=1; how="-" ;;
    g2) env="TF_NODE_LEVEL_MULTISTREAM=true TF_GPU_STREAM_GROUP_COUNT=2 TF_STREAM_FROM_FILE=$tmp/two.txt"; groups=2; how=manual ;;
    g2auto) env="TF_NODE_LEVEL_MULTISTREAM=true TF_GPU_STREAM_GROUP_COUNT=2 MSTREAM_STREAM_ASSIGN=auto"; groups=2; how=auto ;;
    g4) env="TF_NODE_LEVEL_MULTISTREAM=true TF_GPU_STREAM_GROUP_COUNT=4 TF_STREAM_FROM_FILE=$tmp/four.txt"; groups=4; how=manual ;;
    g4auto) env="TF_NODE_LEVEL_MULTISTREAM=true TF_GPU_STREAM_GROUP_COUNT=4 MSTREAM_STREAM_ASSIGN=auto"; groups=4; how=auto ;;
  esac
  : >"$tmp/rates"
  loss=?
  launch=-
  r=0
  while [ $r -lt "$ROUNDS" ]; do
    # shellcheck disable=SC2086
    if ! env $env TF_CPP_MIN_LOG_LEVEL=1 "$BIN" "$MODEL" "$STEPS" "$BATCH" "$STEPS" - >"$tmp/out" 2>&1; then
      echo "training.sh: $cfg failed:" >&2; cat "$tmp/out" >&2; exit 1
    fi
    awk '/steps\/s/ { for (i = 1; i < NF; i++) if ($(i+1) == "steps/s") print $i }' "$tmp/out" >>"$tmp/rates"
    loss=$(awk '/^step [0-9]+ loss/ { l = $4 } END { print l }' "$tmp/out")
    launch=$(awk '/^device launch:/ { l = $3 } END { print (l == "" ? "-" : l) }' "$tmp/out")
    r=$((r + 1))
  done
  med=$(sort -g "$tmp/rates" | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
  echo "| $cfg | $groups | $how | $med | $(awk -v s="$med" -v b="$BATCH" 'BEGIN { printf "%.0f", s * b }') | $loss | $launch |"
done
