#!/bin/sh
# Tests the bundled example (examples/multistream_inference) on the bundled
# model, as `make test` runs it. Each check prints PASS or FAIL; the last line
# is "N passed, M failed".
#
#   values   the model with the 8 input rows of examples/data/
#            model_test.expected.txt folded in as Consts (no feeds): the
#            example's printed first output must match the expected outputs
#            there (computed in float64 by examples/gen, not by the library)
#   smoke    the unmodified model at batch 16 with 2 threads, few runs: both
#            phases report QPS and latencies, the output is [16,1] and every
#            value is a sigmoid's (strictly between 0 and 1), not all equal
#   groups   TF_GPU_STREAM_GROUP_COUNT=4, 4 threads: the multi-thread phase's
#            runs spread over all 4 groups (each serves at least a tenth,
#            and the counts add up to the phase's runs); with the default
#            (stock TF) one group serves them all
#   messages what a user sees: a misspelt field in a text model or config
#            is INVALID_ARGUMENT naming the file, line and column, as the
#            first line (no banner before it); the output's dtype is named
#            (TF_FLOAT); the "no GPU" notice is at most one short line per
#            process and TF_CPP_MIN_LOG_LEVEL=1 silences it
#   savedmodel  a SavedModel directory as MODEL (test/savedmodel/mlp_ref,
#            written by TF's SavedModel Builder): loaded with its variables,
#            the output is [4,3] and each row is a softmax (sums to 1)
#   training the training example (examples/multistream_training) on
#            examples/data/training.pbtxt, 40 steps of batch 64: the loss
#            curve with 4 stream groups in node-level mode (a tower per
#            group, examples/data/training_streams.txt) equals the curve
#            with one group within 1e-5, and so does the curve with 4 groups
#            assigned automatically (MSTREAM_STREAM_ASSIGN=auto); the loss
#            falls; each of the 4 groups ran every step and waited on
#            another's events; where build/venv has
#            TensorFlow, the same C source linked against TF's own
#            libtensorflow gives the same curve within 1e-4 and the SaveV2
#            checkpoints hold the same variables within 2e-3 (read by TF);
#            the same for the graph the example builds itself through the
#            C API (MODEL capi: TF_AddGradients, ResourceApplyAdagrad):
#            4 groups equal 1 group, and TF gives the same curve
#   readme   README.md's code blocks are files of examples/ (or test/) and
#            run as written, with the output the README shows; its
#            benchmark commands run shortened, its stats JSON is checked
#            against a real session's (examples/readme/check_readme.py)
#
# Usage: examples/test.sh [CHECK...]   (default: every check in CHECKS)
# ITERS sets the runs per phase (default 20).
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
ITERS=${ITERS:-20}
# More checks (stream-group counts, ...) go here: a check_NAME function
# below and NAME in this list.
CHECKS=${*:-values smoke groups messages savedmodel training readme}

model=examples/data/model_test.pbtxt
expected=examples/data/model_test.expected.txt
config=examples/data/config_proto
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { echo "PASS $1"; pass=$((pass+1)); }
bad() { echo "FAIL $1"; fail=$((fail+1)); }

if [ ! -e build/libmstream.so ]; then
  make -C "$root" lib >&2 || { echo "0 passed, 1 failed"; exit 1; }
fi
sh examples/build.sh >/dev/null || { echo "FAIL build"; echo "0 passed, 1 failed"; exit 1; }

# first_values prints the values line that follows "first output" in the
# example's output, and the shape line before it, one per line.
first_values() { # output file
  awk '/^first output/{print; getline; print; exit}' "$1"
}

check_values() {
  # Fold the expected inputs into the model: each input block of the
  # expected file replaces the Placeholder of that name by a Const.
  /usr/bin/python3 - "$model" "$expected" "$tmp/frozen.pbtxt" <<'EOF' || { bad "values: cannot fold the inputs in"; return; }
import sys
model, expected, out = sys.argv[1:4]
blocks, lines = {}, open(expected).read().splitlines()
lines = [l for l in lines if not l.startswith("#")]
for head, vals in zip(lines[0::2], lines[1::2]):
    kind, name, dt, *dims = head.split()
    if kind == "input":
        blocks[name] = (dt, [int(d) for d in dims], vals.split())
proto_dt = {"float32": ("DT_FLOAT", "float_val"), "int32": ("DT_INT32", "int_val"),
            "int64": ("DT_INT64", "int64_val")}
text = open(model).read()
# Split the GraphDef text into top-level fields, braces counted outside strings.
fields, depth, start, i, quoted = [], 0, 0, 0, None
while i < len(text):
    c = text[i]
    if quoted:
        if c == "\\":
            i += 1
        elif c == quoted:
            quoted = None
    elif c in "\"'":
        quoted = c
    elif c == "{":
        depth += 1
    elif c == "}":
        depth -= 1
        if depth == 0:
            fields.append(text[start:i + 1])
            start = i + 1
    i += 1
fields.append(text[start:])
done = set()
for k, f in enumerate(fields):
    if '"Placeholder"' not in f:
        continue
    name = f.split('name:', 1)[1].split('"')[1]
    if name not in blocks:
        sys.exit("placeholder %s has no input in %s" % (name, expected))
    dt, dims, vals = blocks[name]
    enum, field = proto_dt[dt]
    shape = " ".join("dim { size: %d }" % d for d in dims)
    values = " ".join("%s: %s" % (field, v) for v in vals)
    fields[k] = ('\nnode { name: "%s" op: "Const" attr { key: "dtype" value { type: %s } } '
                 'attr { key: "value" value { tensor { dtype: %s tensor_shape { %s } %s } } } }'
                 % (name, enum, enum, shape, values))
    done.add(name)
if done != set(blocks):
    sys.exit("inputs %s are not placeholders of the model" % sorted(set(blocks) - done))
open(out, "w").write("".join(fields))
EOF
  if ! build/multistream_inference "$tmp/frozen.pbtxt" 0 1 output 8 "$ITERS" 2 "$config" \
      >"$tmp/values.out" 2>&1; then
    bad "values: the example failed:"; sed 's/^/  /' "$tmp/values.out"; return
  fi
  first_values "$tmp/values.out" >"$tmp/values.got"
  # Compare with the expected outputs; the example prints %.6g.
  if msg=$(/usr/bin/python3 - "$tmp/values.got" "$expected" "$tmp/values.out" 2>&1 <<'EOF'
import sys
got_lines = open(sys.argv[1]).read().splitlines()
lines = [l for l in open(sys.argv[2]).read().splitlines() if not l.startswith("#")]
want = None
for head, vals in zip(lines[0::2], lines[1::2]):
    if head.split()[:2] == ["output", "output"]:
        want_dims = head.split()[3:]
        want = [float(v) for v in vals.split()]
if want is None or len(got_lines) != 2:
    sys.exit("no output block in the expected file, or no first output printed")
shape = got_lines[0].split("shape [")[1].rstrip("]").split(",")
if shape != want_dims:
    sys.exit("shape [%s], want [%s]" % (",".join(shape), ",".join(want_dims)))
got = [float(v) for v in got_lines[1].split()]
# On a GPU, float32 GEMMs run in TF32 as TF allows by default (10-bit
# mantissa inputs): relative error up to ~1e-3 on this model.
rel = 2e-3 if "GPU(s)" in open(sys.argv[3]).read() else 2e-5
if len(got) != min(len(want), 32):
    sys.exit("%d values printed, want %d" % (len(got), min(len(want), 32)))
for i, (g, w) in enumerate(zip(got, want)):
    if abs(g - w) > rel * abs(w) + 1e-6:
        sys.exit("value %d is %r, want %r (relative tolerance %g)" % (i, g, w, rel))
print("%d values match (relative tolerance %g)" % (len(got), rel))
EOF
  ); then
    ok "values: $msg"
  else
    bad "values: $msg"; sed 's/^/  /' "$tmp/values.out"
  fi
}

check_smoke() {
  if ! sh examples/run.sh 16 "$ITERS" 2 >"$tmp/smoke.out" 2>&1; then
    bad "smoke: examples/run.sh failed:"; sed 's/^/  /' "$tmp/smoke.out"; return
  fi
  first_values "$tmp/smoke.out" >"$tmp/smoke.got"
  if msg=$(/usr/bin/python3 - "$tmp/smoke.got" "$tmp/smoke.out" 2>&1 <<'EOF'
import re, sys
head, vals = open(sys.argv[1]).read().splitlines()
out = open(sys.argv[2]).read()
if not head.endswith("shape [16,1]"):
    sys.exit("first output: %s, want shape [16,1]" % head)
v = [float(x) for x in vals.split()]
if len(v) != 16 or not all(0 < x < 1 for x in v) or len(set(v)) < 2:
    sys.exit("values %s: want 16 distinct sigmoid outputs" % v)
for phase, threads in (("single thread", 1), ("multi thread", 2)):
    m = re.search(r"^%s: threads=(\d+) runs=(\d+).*\n\s+QPS ([0-9.]+).*\n\s+latency ms: TP99 ([0-9.]+)\s+TP95 ([0-9.]+)\s+mean ([0-9.]+)" % phase, out, re.M)
    if not m:
        sys.exit("no '%s' report with QPS and latencies" % phase)
    if int(m.group(1)) != threads or float(m.group(3)) <= 0:
        sys.exit("%s: threads=%s QPS %s" % (phase, m.group(1), m.group(3)))
print("batch 16, 2 threads: output [16,1] in (0,1), both phases reported")
EOF
  ); then
    ok "smoke: $msg"
  else
    bad "smoke: $msg"; sed 's/^/  /' "$tmp/smoke.out"
  fi
}

# group_counts prints "USED TOTAL RUNS c0 c1 ..." from the multi-thread
# phase's report: its runs, then the groups line that follows it.
group_counts() { # output file
  /usr/bin/python3 - "$1" <<'EOF'
import re, sys
out = open(sys.argv[1]).read()
m = re.search(r"^multi thread: threads=\d+ runs=(\d+)[^\n]*\n(?:  [^\n]*\n)*?  stream groups: (\d+) of (\d+)(?: on \S+)? served runs:([^\n]*)$", out, re.M)
if not m:
    sys.exit("no stream groups line after the multi thread phase")
counts = re.findall(r"group\d+=(\d+)", m.group(4))
print(m.group(2), m.group(3), m.group(1), " ".join(counts))
EOF
}

check_groups() {
  if ! TF_GPU_STREAM_GROUP_COUNT=4 sh examples/run.sh 16 "$ITERS" 4 >"$tmp/groups4.out" 2>&1; then
    bad "groups: the example failed with 4 groups:"; sed 's/^/  /' "$tmp/groups4.out"; return
  fi
  if ! sh examples/run.sh 16 "$ITERS" 4 >"$tmp/groups1.out" 2>&1; then
    bad "groups: the example failed with 1 group:"; sed 's/^/  /' "$tmp/groups1.out"; return
  fi
  g4=$(group_counts "$tmp/groups4.out") || { bad "groups: $g4"; return; }
  set -- $g4
  used=$1 total=$2 runs=$3; shift 3
  sum=0 low=0
  for c in "$@"; do sum=$((sum + c)); [ "$c" -ge $((runs / 10)) ] || low=1; done
  if [ "$used" -ne 4 ] || [ "$total" -ne 4 ] || [ $# -ne 4 ] || [ "$sum" -ne "$runs" ] || [ $low -ne 0 ]; then
    bad "groups: 4 groups, 4 threads: $used of $total groups used, counts $* for $runs runs"
    sed 's/^/  /' "$tmp/groups4.out"; return
  fi
  counts4="$*"
  g1=$(group_counts "$tmp/groups1.out") || { bad "groups: $g1 (1 group)"; return; }
  set -- $g1
  if [ "$1" -ne 1 ] || [ "$2" -ne 1 ] || [ "$4" -ne "$3" ]; then
    bad "groups: default: $1 of $2 groups used, counts $4 for $3 runs"; return
  fi
  ok "groups: 4 groups x 4 threads: runs per group $counts4 of $runs; 1 group: all $3"
}

check_messages() {
  sed '1s/^node:/nodes:/' "$model" >"$tmp/typo.pbtxt"
  printf 'intra_op_parallelism_threads: 2\ninter_op_paralelism_threads: 2\n' >"$tmp/typo_config"
  for kind in model config; do
    if [ $kind = model ]; then
      set -- "$tmp/typo.pbtxt" 0 1 output 8 1 1
      want="multistream_inference: $tmp/typo.pbtxt: INVALID_ARGUMENT: Invalid text GraphDef: line 1, column 1: unknown field: nodes"
    else
      set -- "$model" 0 1 output 8 1 1 "$tmp/typo_config"
      want="multistream_inference: $tmp/typo_config: INVALID_ARGUMENT: Invalid text ConfigProto: line 2, column 1: unknown field: inter_op_paralelism_threads"
    fi
    if build/multistream_inference "$@" >"$tmp/typo.out" 2>&1; then
      bad "messages: a misspelt $kind file was accepted"; sed 's/^/  /' "$tmp/typo.out"; return
    fi
    first=$(grep -v '^mstream I' "$tmp/typo.out" | head -1)
    if [ "$first" != "$want" ]; then
      bad "messages: misspelt $kind: first line '$first', want '$want'"; return
    fi
  done
  if ! build/multistream_inference "$model" 5 dense ids_0 ids_1 ids_2 ids_3 1 output 4 2 1 >"$tmp/log0.out" 2>&1 ||
     ! TF_CPP_MIN_LOG_LEVEL=1 build/multistream_inference "$model" 5 dense ids_0 ids_1 ids_2 ids_3 1 output 4 2 1 >"$tmp/log1.out" 2>&1; then
    bad "messages: the example failed:"; sed 's/^/  /' "$tmp/log0.out" "$tmp/log1.out"; return
  fi
  if ! grep -q "^first output 'output': dtype TF_FLOAT shape \[4,1\]$" "$tmp/log0.out"; then
    bad "messages: no 'dtype TF_FLOAT' in the output:"; sed 's/^/  /' "$tmp/log0.out"; return
  fi
  notices=$(grep -c '^mstream I' "$tmp/log0.out")
  long=$(awk '/^mstream I/ && length($0) > 120' "$tmp/log0.out")
  if [ "$notices" -gt 1 ] || [ -n "$long" ] || grep -q '^mstream I' "$tmp/log1.out"; then
    bad "messages: $notices info lines (at most 1, of at most 120 characters, none at TF_CPP_MIN_LOG_LEVEL=1):"
    sed 's/^/  /' "$tmp/log0.out" "$tmp/log1.out"; return
  fi
  ok "messages: misspelt model and config fields named with line and column, dtype TF_FLOAT, $notices info line(s)"
}

check_savedmodel() {
  if ! build/multistream_inference test/savedmodel/mlp_ref 1 x 1 y 4 2 1 >"$tmp/sm.out" 2>&1; then
    bad "savedmodel: the example fails on a SavedModel directory"; sed 's/^/  /' "$tmp/sm.out"; return
  fi
  if first_values "$tmp/sm.out" | awk 'NR==1 { if ($0 !~ /shape \[4,3\]/) exit 1 }
      NR==2 { if (NF != 12) exit 1; for (r = 0; r < 4; r++) { t = 0; for (j = 1; j <= 3; j++) t += $(3*r+j); if (t < 0.999 || t > 1.001) exit 1 } }'; then
    ok "savedmodel: test/savedmodel/mlp_ref runs, [4,3] rows of a softmax"
  else
    bad "savedmodel: unexpected output"; first_values "$tmp/sm.out" | sed 's/^/  /'
  fi
}

# losses prints the "step N loss X" lines of a training run's output.
losses() { grep '^step [0-9]* loss ' "$1"; }

check_training() {
  tm=examples/data/training.pbtxt
  ts=examples/data/training_streams.txt
  if ! build/multistream_training "$tm" 40 64 1 "$tmp/ck1/model.ckpt" >"$tmp/train1.out" 2>&1; then
    bad "training: the example failed with 1 group:"; sed 's/^/  /' "$tmp/train1.out"; return
  fi
  if ! TF_NODE_LEVEL_MULTISTREAM=true TF_GPU_STREAM_GROUP_COUNT=4 TF_STREAM_FROM_FILE=$ts \
      build/multistream_training "$tm" 40 64 1 "$tmp/ck4/model.ckpt" >"$tmp/train4.out" 2>&1; then
    bad "training: the example failed with 4 groups:"; sed 's/^/  /' "$tmp/train4.out"; return
  fi
  if ! TF_NODE_LEVEL_MULTISTREAM=true TF_GPU_STREAM_GROUP_COUNT=4 MSTREAM_STREAM_ASSIGN=auto \
      build/multistream_training "$tm" 40 64 1 - >"$tmp/trainauto.out" 2>&1; then
    bad "training: the example failed with 4 groups assigned automatically:"; sed 's/^/  /' "$tmp/trainauto.out"; return
  fi
  # The same model built by the example itself through the C API
  # (TF_AddGradients, MODEL capi): one group and a tower per group.
  if ! build/multistream_training capi 40 64 1 - >"$tmp/capi1.out" 2>&1 ||
     ! TF_NODE_LEVEL_MULTISTREAM=true TF_GPU_STREAM_GROUP_COUNT=4 TF_STREAM_FROM_FILE=$ts \
       build/multistream_training capi 40 64 1 - >"$tmp/capi4.out" 2>&1; then
    bad "training: the example failed on its C-API-built graph:"; sed 's/^/  /' "$tmp/capi1.out" "$tmp/capi4.out"; return
  fi
  : >"$tmp/capitf.out"
  tf=none
  # build/venv's Python when it has TensorFlow (in a subshell: venv.sh also
  # exports the BLAS and oneDNN choices, which the other checks must not see).
  MS_PY=$(ms_root=$root; . "$root/scripts/venv.sh"; ms_have_tf 2>/dev/null && echo "$MS_PY") || MS_PY=
  if [ -n "$MS_PY" ]; then
    tfdir=$("$MS_PY" -c 'import os, tensorflow; print(os.path.dirname(tensorflow.__file__))' 2>/dev/null)
    mkdir -p "$tmp/tf"
    ln -sf "$tfdir/libtensorflow_cc.so.2" "$tmp/tf/libtensorflow.so"
    ln -sf "$tfdir/libtensorflow_cc.so.2" "$tmp/tf/libtensorflow_cc.so.2"
    ln -sf "$tfdir/libtensorflow_framework.so.2" "$tmp/tf/libtensorflow_framework.so.2"
    if ! ${CXX:-g++} -std=c++17 -O1 -fPIC -shared -I "$tfdir/include" -o "$tmp/tf/libmsshim.so" test/capidiff/tfshim.cc \
          -L "$tmp/tf" -l:libtensorflow_framework.so.2 -ltensorflow -Wl,-rpath,"$tmp/tf" ||
       ! ${CC:-cc} -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -I "$tfdir/include" -I include \
          examples/multistream_training/multistream_training.c -o "$tmp/tf/multistream_training" \
          -L "$tmp/tf" -lmsshim -ltensorflow -Wl,-rpath,"$tmp/tf" -lm; then
      bad "training: the example does not build against TF's libtensorflow"; return
    fi
    if ! TF_CPP_MIN_LOG_LEVEL=3 "$tmp/tf/multistream_training" "$tm" 40 64 1 "$tmp/cktf/model.ckpt" >"$tmp/traintf.out" 2>&1; then
      bad "training: the example failed on TF:"; sed 's/^/  /' "$tmp/traintf.out"; return
    fi
    if ! TF_CPP_MIN_LOG_LEVEL=3 "$tmp/tf/multistream_training" capi 40 64 1 - >"$tmp/capitf.out" 2>&1; then
      bad "training: the C-API-built graph failed on TF:"; sed 's/^/  /' "$tmp/capitf.out"; return
    fi
    tf=$tmp/traintf.out
  fi
  losses "$tmp/train1.out" >"$tmp/l1"; losses "$tmp/train4.out" >"$tmp/l4"; losses "$tmp/trainauto.out" >"$tmp/lauto"
  if [ "$tf" != none ]; then losses "$tf" >"$tmp/ltf"; else : >"$tmp/ltf"; fi
  losses "$tmp/capi1.out" >"$tmp/c1"; losses "$tmp/capi4.out" >"$tmp/c4"; losses "$tmp/capitf.out" >"$tmp/ctf"
  if ! msg=$(/usr/bin/python3 - "$tmp/l1" "$tmp/l4" "$tmp/ltf" "$tmp/lauto" "$tmp/train4.out" "$tmp/trainauto.out" \
      "$tmp/c1" "$tmp/c4" "$tmp/ctf" 2>&1 <<'EOF'
import re, sys
def curve(p):
    return [float(l.split()[3]) for l in open(p)]
one, four, tf, auto = (curve(p) for p in sys.argv[1:5])
c1, c4, ctf = (curve(p) for p in sys.argv[7:10])
def worst(a, b):
    return max(abs(x - y) / max(abs(y), 1e-6) for x, y in zip(a, b))
if len(c1) != 40 or len(c4) != 40 or worst(c4, c1) > 1e-5:
    sys.exit("C-API-built graph: 4 groups differ from 1 group (tolerance 1e-5): %s vs %s" % (c4, c1))
if ctf and (len(ctf) != 40 or worst(c1, ctf) > 1e-4):
    sys.exit("C-API-built graph: mstream differs from TF by %.3g relative (tolerance 1e-4)" % worst(c1, ctf))
# Every group ran every step and waited on another's events.
for how, out in (("a tower per group", sys.argv[5]), ("automatic", sys.argv[6])):
    groups = re.findall(r"group\d+ runs=(\d+) waits=(\d+)", open(out).read())
    if len(groups) != 4 or any(int(r) < 40 or int(w) == 0 for r, w in groups):
        sys.exit("4 groups, %s: runs and waits per group %s, want 4 groups, each >= 40 runs and > 0 waits" % (how, groups))
if len(auto) != 40 or worst(auto, one) > 1e-5:
    sys.exit("4 groups assigned automatically differ from 1 group (tolerance 1e-5): %s" % auto)
if len(one) != 40 or len(four) != 40:
    sys.exit("%d and %d losses, want 40 each" % (len(one), len(four)))
if worst(four, one) > 1e-5:
    sys.exit("4 groups differ from 1 group by %.3g relative (tolerance 1e-5)" % worst(four, one))
if not sum(one[-5:]) < sum(one[:5]):
    sys.exit("the loss does not fall: %s" % one)
out = "40 losses, 4 groups vs 1: %.2g (automatic: %.2g); loss %.4f -> %.4f" % (worst(four, one), worst(auto, one), one[0], one[-1])
if tf:
    if len(tf) != 40 or worst(one, tf) > 1e-4:
        sys.exit("mstream differs from TF by %.3g relative (tolerance 1e-4)" % worst(one, tf))
    out += "; vs TF: %.2g; built via TF_AddGradients: 4 groups vs 1 %.2g, vs TF %.2g" % (worst(one, tf), worst(c4, c1), worst(c1, ctf))
print(out)
EOF
  ); then
    bad "training: $msg"; return
  fi
  if [ "$tf" = none ]; then
    if [ -f "$tmp/ck1/model.ckpt.index" ] && [ -f "$tmp/ck4/model.ckpt.index" ]; then
      ok "training: $msg; checkpoints written (no TensorFlow to compare with)"
    else
      bad "training: no checkpoint index at $tmp/ck1/model.ckpt or $tmp/ck4/model.ckpt"
    fi
    return
  fi
  if ck=$(TF_CPP_MIN_LOG_LEVEL=3 "$MS_PY" - "$tmp/cktf/model.ckpt" "$tmp/ck1/model.ckpt" "$tmp/ck4/model.ckpt" 2>&1 <<'EOF'
import sys
import numpy as np
import tensorflow as tf
want = tf.train.load_checkpoint(sys.argv[1])
names = sorted(want.get_variable_to_shape_map())
for path in sys.argv[2:]:
    got = tf.train.load_checkpoint(path)
    if sorted(got.get_variable_to_shape_map()) != names:
        sys.exit("%s holds %s, TF's %s" % (path, sorted(got.get_variable_to_shape_map()), names))
    for n in names:
        w, g = want.get_tensor(n), got.get_tensor(n)
        if not np.allclose(g, w, rtol=2e-3, atol=2e-3 * np.abs(w).max()):
            sys.exit("%s: variable %s differs from TF's by %.3g" % (path, n, np.abs(g - w).max()))
print("%d variables in both checkpoints match TF's" % len(names))
EOF
  ); then
    ok "training: $msg; $ck"
  else
    bad "training: $ck"
  fi
}

check_readme() {
  # Its checks show as they end (the benchmark commands take minutes).
  /usr/bin/python3 -u examples/readme/check_readme.py 2>&1 | tee "$tmp/readme.out" |
    grep --line-buffered -E '^(PASS|FAIL|SKIP) readme' | sed 's/^/  /'
  last=$(tail -1 "$tmp/readme.out")
  case $last in
    *" passed, 0 failed") ok "readme: $last" ;;
    *) bad "readme: ${last:-no result line}" ;;
  esac
}

for c in $CHECKS; do
  case $c in
    values) check_values ;;
    smoke) check_smoke ;;
    groups) check_groups ;;
    messages) check_messages ;;
    savedmodel) check_savedmodel ;;
    training) check_training ;;
    readme) check_readme ;;
    *) bad "unknown check $c" ;;
  esac
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
