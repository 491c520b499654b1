#!/bin/bash
# Every TF_CAPI_EXPORT function in include/ is exported by build/libmstream.so, and
# nothing but TF_*/TFE_*/MS_* is.
repo=$(cd "$(dirname "$0")/.." && pwd)
lib=$repo/build/libmstream.so
if [ -x "$repo/test/headers/functions.sh" ]; then want=$("$repo/test/headers/functions.sh" | sort -u)
else want=$(grep -rhoE 'TF_CAPI_EXPORT[^;]*\b(TF|TFE|MS)_[A-Za-z0-9_]+\(' "$repo/include" | grep -oE '(TF|TFE|MS)_[A-Za-z0-9_]+\($' | tr -d '(' | sort -u); fi
have=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | sort -u)
ok=0
missing=$(comm -23 <(echo "$want") <(echo "$have")); [ -z "$missing" ] || { echo "symbols: not exported: $missing"; ok=1; }
extra=$(echo "$have" | grep -vE '^(TF|TFE|MS)_' | grep -v '^$'); [ -z "$extra" ] || { echo "symbols: unexpected exports: $extra"; ok=1; }
[ $ok -eq 0 ] && echo "symbols: $(echo "$want" | grep -c .) functions declared in include/, all exported; $(echo "$have" | grep -c .) exported, all TF_/TFE_/MS_"
exit $ok
