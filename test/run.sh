#!/bin/bash
# Builds the library if needed, compiles and runs every test/c/*.c against
# build/libtensorflow.so, then the export-list check; the last line sums the results.
repo=$(cd "$(dirname "$0")/.." && pwd)
[ -e "$repo/build/libtensorflow.so" ] || make -C "$repo" >&2 || { echo "0 passed, 1 failed"; exit 1; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
pass=0; fail=0
for src in "$repo"/test/c/*_test.c; do
  name=$(basename "$src" .c)
  if ! gcc -I "$repo/include" -o "$tmp/$name" "$src" -L "$repo/build" -ltensorflow \
      -Wl,-rpath,"$repo/build" -lpthread -lm -Wall -Werror; then
    echo "FAIL $name: does not compile"; fail=$((fail+1)); continue
  fi
  out=$("$tmp/$name" 2>&1); echo "$out" | sed "s/^/$name: /"
  last=$(echo "$out" | tail -1)
  if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
    pass=$((pass+BASH_REMATCH[1])); fail=$((fail+BASH_REMATCH[2]))
  else echo "FAIL $name: crashed"; fail=$((fail+1)); fi
done
if "$repo/test/symbols.sh"; then pass=$((pass+1)); else fail=$((fail+1)); fi
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]
