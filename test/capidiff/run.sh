#!/bin/bash
# The C-API differential suite: the same C programs run against TF 2.15's own
# libtensorflow (from the tensorflow-cpu wheel in build/venv) and against
# build/libtensorflow.so (mstream), and every observable is compared.
#   1. capidiff.c's scripted catalogue: one transcript per case from each
#      library; a case passes when the two are identical.
#   2. capidiff.c's random call sequences: CAPIDIFF_SEQS sequences (default 200)
#      drawn from CAPIDIFF_SEED (default 3, which CI runs); each sequence
#      passes when its transcripts are identical.
#   3. test/c's programs built against TF (-DMS_ON_TF) and run there: their
#      checks are expectations real TF must meet too.
# Skipped ("skipped: no TensorFlow") when build/venv has no TensorFlow.
# The last line is "N passed, M failed".   Usage: test/capidiff/run.sh [catalogue|random|c]...
set -u
repo=$(cd "$(dirname "$0")/../.." && pwd)
here=$repo/test/capidiff
ms_root=$repo
. "$repo/scripts/venv.sh"
if ! ms_have_tf; then echo "0 passed, 0 failed, 1 skipped"; exit 0; fi
die() { echo "capidiff: $*" >&2; echo "0 passed, 1 failed"; exit 1; }
[ -e "$repo/build/libtensorflow.so" ] || make -C "$repo" lib >&2 || die "build failed"
tfdir=$("$MS_PY" -c 'import os, tensorflow; print(os.path.dirname(tensorflow.__file__))' 2>/dev/null) ||
  die "cannot locate the tensorflow package"
[ -f "$tfdir/libtensorflow_cc.so.2" ] || die "no libtensorflow_cc.so.2 in $tfdir"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# TF's C API under the names a client links: libtensorflow.so, and the
# sonames it needs beside it.
lib=$tmp/tf
mkdir -p "$lib"
ln -s "$tfdir/libtensorflow_cc.so.2" "$lib/libtensorflow.so"
ln -s "$tfdir/libtensorflow_cc.so.2" "$lib/libtensorflow_cc.so.2"
ln -s "$tfdir/libtensorflow_framework.so.2" "$lib/libtensorflow_framework.so.2"
${CXX:-g++} -std=c++17 -O1 -fPIC -shared -I "$tfdir/include" -o "$lib/libmsshim.so" "$here/tfshim.cc" \
  -L "$lib" -l:libtensorflow_framework.so.2 -ltensorflow -Wl,-rpath,"$lib" || die "tfshim.cc does not build"
# Builds $1 from C source $2 against TF ($3 = tf) or mstream ($3 = ms).
build() {
  if [ "$3" = tf ]; then
    ${CC:-gcc} -DMS_ON_TF -I "$tfdir/include" -I "$repo/include" -o "$1" "$2" -L "$lib" -lmsshim -ltensorflow \
      -Wl,-rpath,"$lib" -lpthread -lm -Wall -Werror
  else
    ${CC:-gcc} -I "$repo/include" -o "$1" "$2" -L "$repo/build" -ltensorflow -Wl,-rpath,"$repo/build" \
      -lpthread -lm -Wall -Werror
  fi
}
export TF_CPP_MIN_LOG_LEVEL=3 MSTREAM_DEVICE=${MSTREAM_DEVICE:-cpu}
pass=0; fail=0

# Splits transcripts $1 (TF) and $2 (mstream) at their "== " lines and compares
# each part; a difference prints as a unified diff.
compare() { # label tf.txt ms.txt
  local label=$1 n=0 p=0 f=0 name
  csplit -s -z -f "$tmp/tf_" -b '%04d' "$2" '/^== /' '{*}' 2>/dev/null
  csplit -s -z -f "$tmp/ms_" -b '%04d' "$3" '/^== /' '{*}' 2>/dev/null
  for t in "$tmp"/tf_*; do
    m=$tmp/ms_${t##*_}
    name=$(head -1 "$t")
    n=$((n+1))
    if [ -f "$m" ] && cmp -s "$t" "$m"; then p=$((p+1)); else
      f=$((f+1)); echo "FAIL $label ${name#== }:"; diff -u "$t" "$m" | sed -n '3,40p' | sed 's/^/    /'; fi
  done
  # mstream printed parts that TF did not (it must not, both run the same sequence).
  for m in "$tmp"/ms_*; do [ -f "$tmp/tf_${m##*_}" ] || { f=$((f+1)); echo "FAIL $label: extra part $(head -1 "$m")"; }; done
  rm -f "$tmp"/tf_* "$tmp"/ms_*
  echo "$label: $n compared, $p identical, $f differ"
  pass=$((pass+p)); fail=$((fail+f))
}

run_catalogue() {
  "$tmp/capidiff_tf" >"$tmp/cat_tf.txt" 2>"$tmp/cat_tf.err" || { echo "FAIL catalogue: crashed on TF"; tail -5 "$tmp/cat_tf.err"; fail=$((fail+1)); }
  "$tmp/capidiff_ms" >"$tmp/cat_ms.txt" 2>"$tmp/cat_ms.err" || { echo "FAIL catalogue: crashed on mstream"; tail -5 "$tmp/cat_ms.err"; fail=$((fail+1)); }
  compare catalogue "$tmp/cat_tf.txt" "$tmp/cat_ms.txt"
}

run_random() {
  local seed=${CAPIDIFF_SEED:-3} n=${CAPIDIFF_SEQS:-200}
  echo "random: seed $seed, $n sequences (CAPIDIFF_SEED=$seed CAPIDIFF_SEQS=$n to repeat)"
  "$tmp/capidiff_tf" random "$seed" "$n" >"$tmp/rnd_tf.txt" 2>"$tmp/rnd_tf.err" || { echo "FAIL random: crashed on TF"; fail=$((fail+1)); }
  "$tmp/capidiff_ms" random "$seed" "$n" >"$tmp/rnd_ms.txt" 2>"$tmp/rnd_ms.err" || { echo "FAIL random: crashed on mstream"; fail=$((fail+1)); }
  compare random "$tmp/rnd_tf.txt" "$tmp/rnd_ms.txt"
}

# test/c against TF. multistream_test is mstream's own: every phase sets an
# mstream knob (TF_GPU_STREAM_GROUP_COUNT without a GPU, MSTREAM_*) and reads
# it back through MS_SessionConfig, MS_SessionStats or MS_SessionWriteTrace.
run_c() {
  local src name out last
  for src in "$repo"/test/c/*_test.c; do
    name=$(basename "$src" .c)
    [ "$name" = multistream_test ] && { echo "c on TF: $name not run (mstream's knobs and extensions only)"; continue; }
    build "$tmp/$name" "$src" tf || { echo "FAIL c on TF: $name does not build"; fail=$((fail+1)); continue; }
    out=$("$tmp/$name" 2>&1)
    last=$(echo "$out" | tail -1)
    if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
      echo "c on TF: $name: $last"
      echo "$out" | grep '^FAIL' | sed 's/^/    /'
      pass=$((pass+BASH_REMATCH[1])); fail=$((fail+BASH_REMATCH[2]))
    else
      echo "FAIL c on TF: $name crashed:"; echo "$out" | grep -v '^[0-9-]* [0-9:.]*: [IW] ' | tail -5 | sed 's/^/    /'
      fail=$((fail+1))
    fi
  done
}

build "$tmp/capidiff_tf" "$here/capidiff.c" tf || die "capidiff.c does not build against TF"
build "$tmp/capidiff_ms" "$here/capidiff.c" ms || die "capidiff.c does not build against mstream"
echo "catalogue: $("$tmp/capidiff_ms" list | wc -l) cases"
for part in ${*:-catalogue random c}; do
  case $part in
    catalogue) run_catalogue ;;
    random) run_random ;;
    c) run_c ;;
    *) die "unknown part $part" ;;
  esac
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
