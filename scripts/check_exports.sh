#!/bin/sh
# Checks the export list of build/libmstream.so against include/: every function
# declared with TF_CAPI_EXPORT in a header we ship is exported, and nothing but
# TF_*, TFE_* and MS_* is.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
lib=${1:-$root/build/libmstream.so}
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
# Join each declaration onto one line, then take the name before the first '('.
find "$root/include" -name '*.h' -exec cat {} + |
  tr '\n' ' ' | tr ';' '\n' | grep 'TF_CAPI_EXPORT' |
  grep -oE '\b(TF|TFE|MS|TSL)_[A-Za-z0-9_]+[[:space:]]*\(' | tr -d '( ' |
  grep -vE '^(TF_CAPI_EXPORT|TF_ATTRIBUTE_[A-Z_]+)$' | sort -u > "$tmp/want"
# The above takes the first call-like name of each declaration: the function.
nm -D --defined-only "$lib" | awk '$2 ~ /[TtWwVvDdBbRr]/ {print $3}' | sed 's/@.*//' | sort -u > "$tmp/have"
status=0
missing=$(comm -23 "$tmp/want" "$tmp/have")
if [ -n "$missing" ]; then echo "check_exports: declared but not exported:"; echo "$missing" | sed 's/^/  /'; status=1; fi
extra=$(grep -vE '^(TF|TFE|MS)_' "$tmp/have" || true)
if [ -n "$extra" ]; then echo "check_exports: exported but not TF_/TFE_/MS_:"; echo "$extra" | sed 's/^/  /'; status=1; fi
[ $status -eq 0 ] && echo "check_exports: $(wc -l < "$tmp/want") declared functions, all exported; nothing else exported"
exit $status
