# Sourced by bench/cpu/vs_tf.sh, vs_base.sh and tail.sh: what their runs of
# one model are, so that the three run it alike. Expects out (build/vs_tf),
# m (its models) and MS_PY set, and for client_cmd p (the peers' converted
# models) and intra (their threads, cfg_intra).

# model_point MODEL sets file (the GraphDef's name), cfg (the ConfigProto:
# cfg_noopt.pb for a *_noopt model, TF's optimizations off), opt (ORT's
# graph optimizations, all or none alike), one (set for a model that runs
# at B=1 only) and ids (IDS_MAX: below every table's rows, the bundled
# model's smallest has 200).
model_point() {
  file=$1 cfg=cfg.pb opt=all one=
  case $1 in *_noopt) file=${1%_noopt} cfg=cfg_noopt.pb opt=none ;; esac
  case $file in chain | wide | while1000) one=1 ;; esac
  ids=100000
  [ "$file" != model_test ] || ids=200
}

# cfg_intra prints the intra-op threads of cfg.pb, which the peers get.
cfg_intra() {
  "$MS_PY" -c 'import sys, tensorflow as tf; print(tf.compat.v1.ConfigProto.FromString(open(sys.argv[1], "rb").read()).intra_op_parallelism_threads)' "$m/cfg.pb" 2>/dev/null
}

# client_cmd SIDE BATCHES THREADS DUR sets run, the command of SIDE's C
# client (ms, tf, ort, ov) for model_point's model, with intra the peers'
# threads and, for a peer, the input names of its conversion's spec (none
# before one); it fails for any other side.
client_cmd() {
  ins=
  case $1 in ort | ov)
    [ ! -e "$p/$file.spec.json" ] ||
      ins=$("$MS_PY" -c 'import json, sys; print(",".join(i["name"] for i in json.load(open(sys.argv[1]))["inputs"]))' "$p/$file.spec.json")
    ;;
  esac
  case $1 in
    ms | tf) run="$out/loadgen_$1 $m/$file.pb $2 $3 $4 $m/$cfg" ;;
    ort) run="$out/loadgen_ort $p/$file.onnx $2 $3 $4 $intra $opt $ins" ;;
    ov) run="$out/loadgen_ov $p/$file.xml $2 $3 $4 $intra $ins" ;;
    *) return 1 ;;
  esac
}
