#!/bin/sh
# Installs what the build and the tests need on a fresh Debian bookworm machine
# that already has Go and gcc. Idempotent: does nothing when all is present.
set -eu
# test/gobind generates the TF Go bindings' protos with protoc-gen-go, at the
# protobuf version of go.mod (in the module cache already, so no network).
if ! command -v protoc-gen-go >/dev/null && ! [ -x "$(go env GOPATH)/bin/protoc-gen-go" ]; then
  pb=$(awk '$1 == "google.golang.org/protobuf" {print $2} $2 == "google.golang.org/protobuf" {print $3}' \
    "$(dirname "$0")/../go.mod" | head -1)
  echo "scripts/setup.sh: installing protoc-gen-go@$pb" >&2
  go install "google.golang.org/protobuf/cmd/protoc-gen-go@$pb"
fi
missing=""
# valgrind and protobuf-compiler: test/valgrind and test/gobind; clang:
# kernels/cuda checks its CUDA C with clang's CUDA front end.
for pkg in libopenblas-dev python3-numpy pkg-config valgrind protobuf-compiler clang; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $pkg"
  fi
done
[ -z "$missing" ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "scripts/setup.sh: installing$missing" >&2
$sudo apt-get update
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y $missing
