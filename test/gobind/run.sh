#!/bin/bash
# Builds test/gobind/main.go, a client of the official TensorFlow Go bindings
# (github.com/tensorflow/tensorflow/tensorflow/go, v2.15.0), against TF's own
# headers and build/libtensorflow.so, and runs it. The last line is
# "N passed, M failed".
#
# Everything generated lives in a temporary directory: the Go code of the
# protos the bindings import (tensorflow/core/{framework,protobuf}/*.proto and
# tsl/protobuf/*.proto, closed over their imports, made with protoc and
# protoc-gen-go), a local copy of the TF module's Go bindings and C headers
# with those protos, and a throwaway main module whose go.mod replaces the TF
# and TSL modules with those directories. Only the Go module cache (or, when
# something is missing from it, the Go module proxy) is used.
set -uo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
here=$repo/test/gobind
die() { echo "gobind: $*" >&2; echo "0 passed, 1 failed"; exit 1; }

TF_MOD=github.com/tensorflow/tensorflow
TF_VER=v2.15.0+incompatible
PB_VER=$(awk '$1 == "google.golang.org/protobuf" {print $2} $2 == "google.golang.org/protobuf" {print $3}' "$repo/go.mod" | head -1)
[ -n "$PB_VER" ] || die "no google.golang.org/protobuf version in go.mod"
command -v protoc >/dev/null || die "protoc not found (scripts/setup.sh installs protobuf-compiler)"
gen=$(command -v protoc-gen-go || echo "$(go env GOPATH)/bin/protoc-gen-go")
[ -x "$gen" ] || die "protoc-gen-go not found (scripts/setup.sh installs it)"
[ -e "$repo/build/libtensorflow.so" ] || make -C "$repo" >&2 || die "build failed"

T=$(mktemp -d); trap 'rm -rf "$T"' EXIT
# Offline first; the module proxy only when the cache lacks a module.
gocmd() { GOFLAGS=-mod=mod GOSUMDB=off GOPROXY=off "$@" 2>"$T/go.err" ||
  GOFLAGS=-mod=mod GOSUMDB=off "$@"; }

tf=$(go env GOMODCACHE)/$TF_MOD@$TF_VER
if [ ! -f "$tf/tensorflow/go/graph.go" ]; then
  (mkdir "$T/dl" && cd "$T/dl" && go mod init dl >/dev/null 2>&1 && gocmd go mod download "$TF_MOD@$TF_VER") ||
    die "cannot download $TF_MOD@$TF_VER"
fi
tsl=$tf/third_party/xla/third_party/tsl

# The protos the bindings import, closed over their imports.
todo="tensorflow/core/protobuf/saved_model.proto tensorflow/core/protobuf/meta_graph.proto tensorflow/core/protobuf/config.proto"
protos=""
while [ -n "$todo" ]; do
  set -- $todo; p=$1; shift; todo="$*"
  case " $protos " in *" $p "*) continue ;; esac
  protos="$protos $p"
  f=$tf/$p; [ -f "$f" ] || f=$tsl/$p; [ -f "$f" ] || die "missing $p"
  for dep in $(sed -n 's/^import \(public \)\{0,1\}"\(.*\)";.*/\2/p' "$f" | grep -v '^google/protobuf/'); do
    todo="$todo $dep"
  done
done
mkdir -p "$T/gen"
# TF 2.15 moved graph_debug_info.proto into for_core_protos_go_proto, which
# imports graph_go_proto, which imports graph_debug_info: an import cycle that
# breaks the bindings as TF ships them. Generating that one file into a package
# of its own (protoc-gen-go's M option) breaks the cycle.
debug_info=tensorflow/core/framework/graph_debug_info.proto
# shellcheck disable=SC2086
protoc -I "$tf" -I "$tsl" --plugin=protoc-gen-go="$gen" --go_out="$T/gen" \
  --go_opt="M$debug_info=$TF_MOD/tensorflow/go/core/framework/graph_debug_info_go_proto" $protos ||
  die "protoc failed"
echo "gobind: generated Go for $(echo $protos | wc -w) protos" >&2

# The TF module as published declares no go version (so Go reads it as 1.16,
# and the bindings use `any`), so build from a copy of its Go files, TF's
# headers and the generated protos, as one local module replacing it.
mod=$T/tf
mkdir -p "$mod/tensorflow/go/op"
for f in "$tf"/tensorflow/go/*.go "$tf"/tensorflow/go/op/*.go; do
  case $f in *_test.go) continue ;; esac
  cp "$f" "$mod/${f#"$tf"/}" || die "copy $f"
done
printf '#include "tensorflow/c/c_api.h"\n#include "tensorflow/c/eager/c_api.h"\n' >"$T/top.h"
for h in $(${CC:-cc} -MM -I "$tf" -I "$tsl" -x c "$T/top.h" | tr ' \\' '\n\n' | grep '\.h$' | grep -v 'top\.h$'); do
  rel=${h#"$tsl"/}; rel=${rel#"$tf"/}
  mkdir -p "$mod/$(dirname "$rel")" && cp "$h" "$mod/$rel" || die "copy $h"
done
[ -d "$T/gen/$TF_MOD/tensorflow/go/core/protobuf/for_core_protos_go_proto" ] || die "unexpected protoc-gen-go layout"
cp -r "$T/gen/$TF_MOD/tensorflow" "$mod/" || die "copy generated protos"
tslmod=$T/gen/github.com/google/tsl
printf 'module %s\n\ngo 1.21\n\nrequire (\n\tgithub.com/google/tsl v0.0.0\n\tgoogle.golang.org/protobuf %s\n)\n\nreplace github.com/google/tsl => %s\n' \
  "$TF_MOD" "$PB_VER" "$tslmod" >"$mod/go.mod"
printf 'module github.com/google/tsl\n\ngo 1.21\n\nrequire google.golang.org/protobuf %s\n' "$PB_VER" >"$tslmod/go.mod"

mkdir -p "$T/main"
cp "$here/main.go" "$T/main/"
cat >"$T/main/go.mod" <<MOD
module gobind

go 1.21

require (
	$TF_MOD v0.0.0
	github.com/google/tsl v0.0.0
	google.golang.org/protobuf $PB_VER
)

replace (
	$TF_MOD => $mod
	github.com/google/tsl => $tslmod
)
MOD
export CGO_LDFLAGS="-L$repo/build -Wl,-rpath,$repo/build"
if ! (cd "$T/main" && gocmd go build -tags tfgobind -o "$T/gobind" .); then
  cat "$T/go.err" >&2
  die "the bindings do not build against build/libtensorflow.so"
fi
out=$(MSTREAM_REPO=$repo "$T/gobind" 2>&1); echo "$out" | sed 's/^/gobind: /' >&2
last=$(echo "$out" | tail -1)
[[ $last =~ ^[0-9]+\ passed,\ [0-9]+\ failed$ ]] || die "crashed"
pass=$(echo "$last" | cut -d' ' -f1); fail=$(echo "$last" | cut -d' ' -f3)

# The bindings' own tests (tensorflow/go and tensorflow/go/op), run against
# the library, eager ones left out (context_test.go, tensor_handle_test.go:
# mstream has no eager runtime). Each test is one result; TestDataset must be
# among the passed.
for f in "$tf"/tensorflow/go/*_test.go "$tf"/tensorflow/go/op/*_test.go; do
  case $f in */context_test.go|*/tensor_handle_test.go) continue ;; esac
  cp "$f" "$mod/${f#"$tf"/}" || die "copy $f"
done
# saved_model_test.go loads testdata/saved_model/half_plus_two.
cp -rL "$tf/tensorflow/go/testdata" "$mod/tensorflow/go/" || die "copy the bindings' test data"
(cd "$mod" && GOFLAGS=-mod=mod GOSUMDB=off GOPROXY=off go test -count=1 -v ./tensorflow/go/ ./tensorflow/go/op/ >"$T/own.out" 2>&1)
own_pass=$(grep -c '^--- PASS' "$T/own.out"); own_fail=$(grep -c '^--- FAIL' "$T/own.out")
grep '^--- FAIL' "$T/own.out" | sed 's/^/gobind: the bindings'"'"' own test: /' >&2
grep '^--- .*TestDataset ' "$T/own.out" | sed 's/^/gobind: /' >&2
grep -q '^--- PASS: TestDataset ' "$T/own.out" || { own_fail=$((own_fail+1)); echo "gobind: TestDataset did not pass" >&2; }
echo "gobind: the bindings' own tests (non-eager): $own_pass passed, $own_fail failed" >&2
[ $((own_pass+own_fail)) -gt 0 ] || { sed 's/^/gobind: /' "$T/own.out" | tail -20 >&2; die "the bindings' own tests did not run"; }
. "$repo/scripts/result.sh"
ms_result_line $((pass+own_pass)) $((fail+own_fail))
[ $((fail+own_fail)) -eq 0 ]
