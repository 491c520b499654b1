#!/bin/bash
# Compiles client.c against TensorFlow 2.15's OWN headers (copied from the Go
# module cache into a temporary directory, never into the repository), as C11
# and as C++11, links it against build/libtensorflow.so and runs it. The last
# line is "N passed, M failed".
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
here=$repo/test/tfheaders
die() { echo "tfheaders: $*" >&2; echo "0 passed, 1 failed"; exit 1; }
tf=${TF:-$(go env GOMODCACHE)/github.com/tensorflow/tensorflow@v2.15.0+incompatible}
if [ ! -f "$tf/tensorflow/c/c_api.h" ]; then
  (cd "$(mktemp -d)" && go mod init x >/dev/null 2>&1 &&
    go mod download github.com/tensorflow/tensorflow@v2.15.0+incompatible) || die "go mod download failed"
fi
[ -f "$tf/tensorflow/c/c_api.h" ] || die "no TF source at $tf"
[ -e "$repo/build/libtensorflow.so" ] || make -C "$repo" >&2 || die "build failed"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
tsl=$tf/third_party/xla/third_party/tsl
# The headers c_api.h and eager/c_api.h pull in, laid out as an install would.
printf '#include "tensorflow/c/c_api.h"\n#include "tensorflow/c/eager/c_api.h"\n' >"$tmp/top.h"
hdrs=$(${CC:-cc} -MM -I "$tf" -I "$tsl" -x c "$tmp/top.h" | tr ' \\' '\n\n' | grep '\.h$' | grep -v 'top\.h$') ||
  die "cannot list TF's headers"
for h in $hdrs; do
  rel=${h#"$tsl"/}; rel=${rel#"$tf"/}
  mkdir -p "$tmp/include/$(dirname "$rel")" && cp "$h" "$tmp/include/$rel" || die "copy $h"
done
echo "tfheaders: $(echo "$hdrs" | wc -w) TF headers" >&2
pass=0; fail=0
for lang in c c++; do
  cc=${CC:-cc}; std=c11
  [ $lang = c++ ] && { cc=${CXX:-c++}; std=c++11; }
  if ! $cc -x $lang -std=$std -Wall -Wextra -Werror -I "$tmp/include" "$here/client.c" -x none \
      -o "$tmp/client_$lang" -L "$repo/build" -ltensorflow -Wl,-rpath,"$repo/build"; then
    echo "tfheaders: client.c does not build as $lang against TF's headers"; fail=$((fail+1)); continue
  fi
  out=$("$tmp/client_$lang" 2>&1); echo "$out" | sed "s/^/tfheaders ($lang): /" >&2
  if [[ $(echo "$out" | tail -1) =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    pass=$((pass+BASH_REMATCH[1])); fail=$((fail+BASH_REMATCH[2]))
  else fail=$((fail+1)); fi
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
