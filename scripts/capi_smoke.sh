#!/bin/sh
# Builds scripts/capi_smoke.c against build/libtensorflow.so and runs it.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
${CC:-cc} -std=c11 -Wall -Wextra -Werror -I "$root/include" "$root/scripts/capi_smoke.c" \
  -o "$tmp/capi_smoke" -L "$root/build" -ltensorflow -Wl,-rpath,"$root/build"
"$tmp/capi_smoke"
