#!/usr/bin/env bash
# Prints, sorted and one per line, the name of every function declared with
# TF_CAPI_EXPORT in the headers under include/: the symbols libmstream.so
# must export (TF_*, TFE_*, MS_*).
#
#   functions.sh [--all] [DIR_OR_HEADER...]
#
# Paths default to include/ next to this script. With --all the list also
# holds functions declared without TF_CAPI_EXPORT: the plain `extern` TSL_*
# declarations and the `static inline` TF_TString_* helpers (abi_check.sh
# uses that to take the address of everything a header declares).
#
# How: the C preprocessor strips comments (-fpreprocessed leaves macros and
# #if unexpanded), directive lines are dropped, and the text is cut into
# declarations at ';', '{' and '}'. A declaration is a function when it
# carries TF_CAPI_EXPORT (or, with --all, starts with extern / inline /
# static inline) and has a '('; its name is the identifier just before the
# first '('.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
CC=${CC:-cc}
all=0
if [ "${1:-}" = "--all" ]; then all=1; shift; fi
[ $# -gt 0 ] || set -- "$here/../../include"

for p in "$@"; do
  if [ -d "$p" ]; then find "$p" -name '*.h'; else echo "$p"; fi
done | LC_ALL=C sort -u | while read -r h; do
  cat "$h"
  printf '\n;\n'
done |
  "$CC" -w -fpreprocessed -dD -E -P -x c - |
  sed -e ':a' -e '/\\$/{N;s/\\\n/ /;ba' -e '}' |
  grep -v '^[[:space:]]*#' |
  tr '\n\t' '  ' | tr ';{}' '\n\n\n' |
  sed -E 's/^[[:space:]]+//; s/^extern "C"[[:space:]]*//' |
  if [ $all = 1 ]; then
    grep -E '^(TF_CAPI_EXPORT|extern|inline|static[[:space:]]+inline)[[:space:]]|[[:space:]]TF_CAPI_EXPORT[[:space:]]'
  else
    grep -E '(^|[[:space:]])TF_CAPI_EXPORT[[:space:]]'
  fi |
  grep -v '^typedef[[:space:]]' | grep '(' |
  sed -E 's/^([^(]*[^A-Za-z0-9_(])?([A-Za-z_][A-Za-z0-9_]*)[[:space:]]*\(.*$/\2/' |
  LC_ALL=C sort -u
