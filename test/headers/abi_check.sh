#!/usr/bin/env bash
# Checks that include/ declares the TensorFlow 2.15 C API with TF's exact ABI,
# by compiling the same programs against our headers and against TF 2.15's
# own and comparing what comes out:
#   - the same headers at the same paths, and the same functions (lists
#     extracted by functions.sh from both trees);
#   - every function TF declares has its address taken in one generated C
#     (and C++) file that must compile against both header sets;
#   - every function's exact C++ type (typeid), every public struct's size,
#     alignment, member offsets and member types, every enum value and the
#     values and expansions of TF's macros are printed by both builds and
#     must match; layout.c also holds TF's LP64 numbers as static asserts;
#   - the inline TF_TString functions behave identically (tstring_test.c,
#     raw bytes included), as C and C++, at -O0 and -O2, and are clean under
#     ASan/UBSan;
#   - each header compiles on its own and in C99..C++20 with -Wall -Wextra
#     -Werror -pedantic; C++ sees C linkage; TF_CAPI_WEAK makes weak symbols.
# With --go it also runs cgo over the official TF Go bindings against both
# header sets and requires identical Go types (slower, so not by default).
# Exits non-zero on any failure; the last line is "N passed, M failed".
#
# TF's source comes from the Go module cache (downloaded if missing), or from
# $TF if set. $CC and $CXX pick the compilers (default cc, c++); $JOBS the
# number of checks run at once (default: the number of CPUs).
set -uo pipefail

go_bindings=0
for arg in "$@"; do
  case $arg in
    --go) go_bindings=1 ;;
    *) echo "usage: $0 [--go]" >&2; exit 2 ;;
  esac
done

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
inc=$repo/include
CC=${CC:-cc}
CXX=${CXX:-c++}
TF_MODULE=github.com/tensorflow/tensorflow
TF_VERSION=v2.15.0+incompatible

die() { echo "abi_check: $*" >&2; echo "0 passed, 1 failed"; exit 1; }

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

if [ -z "${TF:-}" ]; then
  command -v go >/dev/null || die "go not found and \$TF not set"
  TF=$(go env GOMODCACHE)/$TF_MODULE@$TF_VERSION
  if [ ! -f "$TF/tensorflow/c/c_api.h" ]; then
    echo "abi_check: fetching $TF_MODULE@$TF_VERSION into the module cache" >&2
    (mkdir "$T/mod" && cd "$T/mod" && go mod init x >/dev/null 2>&1 &&
      go mod download "$TF_MODULE@$TF_VERSION") || die "go mod download failed"
  fi
fi
[ -f "$TF/tensorflow/c/c_api.h" ] || die "no TF source at $TF"

OURS=(-I "$inc")
THEIRS=(-I "$TF" -I "$TF/third_party/xla/third_party/tsl")
WARN=(-Wall -Wextra -Werror -pedantic)

# ---- Shared inputs -----------------------------------------------------------

printf '#include "tensorflow/c/c_api.h"\n#include "tensorflow/c/eager/c_api.h"\n' >"$T/top.h"

# Headers that TF's (or our) c_api.h and eager/c_api.h pull in, one per line.
deps() {
  "$CC" -MM "$@" -x c "$T/top.h" | sed 's/\\$//' | tr ' ' '\n' |
    grep '\.h$' | grep -v '^top\.h$' | grep -v "/top\.h$" | xargs realpath | LC_ALL=C sort -u
}
deps "${THEIRS[@]}" >"$T/tf_hdrs" || die "cannot list TF's headers"
deps "${OURS[@]}" >"$T/our_hdrs" || die "cannot list our headers"

"$here/functions.sh" $(cat "$T/tf_hdrs") >"$T/tf_exports"
"$here/functions.sh" --all $(cat "$T/tf_hdrs") >"$T/tf_all"
"$here/functions.sh" >"$T/our_exports_ms"
grep -v '^MS_' "$T/our_exports_ms" >"$T/our_exports"
"$here/functions.sh" --all $(cat "$T/our_hdrs") >"$T/our_all"
[ -s "$T/tf_exports" ] && [ -s "$T/tf_all" ] || die "no functions found in TF's headers"

# In C++, TF's eager/c_api.h overloads TFE_NewTensorHandle with a
# tensorflow::Tensor& version (which we do not declare); name the C one by
# its type there. Everywhere else `&f` names the function.
OVERLOAD_MACRO='#ifdef __cplusplus
#define FN_C_OVERLOAD(type, f) static_cast<type>(&f)
#else
#define FN_C_OVERLOAD(type, f) (&f)
#endif'
addr() { # reads names, writes address expressions
  sed -e 's/^TFE_NewTensorHandle$/FN_C_OVERLOAD(TFE_TensorHandle* (*)(const TF_Tensor*, TF_Status*), TFE_NewTensorHandle)/' \
    -e 's/^[A-Za-z_][A-Za-z0-9_]*$/\&&/'
}

# allfuncs.c: the address of every function TF's headers declare.
gen_allfuncs() { # list includes...
  local list=$1
  shift
  for h in "$@"; do echo "#include \"$h\""; done
  echo "$OVERLOAD_MACRO"
  echo 'typedef void (*fnptr)(void);'
  echo 'fnptr all_functions[] = {'
  addr <"$list" | sed 's/.*/  (fnptr)&,/'
  echo '};'
}
gen_allfuncs "$T/tf_all" tensorflow/c/c_api.h tensorflow/c/eager/c_api.h >"$T/allfuncs.c"
gen_allfuncs "$T/our_exports_ms" tensorflow/c/c_api.h tensorflow/c/eager/c_api.h \
  mstream/mstream.h >"$T/ourfuncs.c"

# sigs.cc: the exact C++ type of every function TF's headers declare.
{
  echo '#include <cstdio>'
  echo '#include <typeinfo>'
  echo '#include "tensorflow/c/c_api.h"'
  echo '#include "tensorflow/c/eager/c_api.h"'
  echo "$OVERLOAD_MACRO"
  echo 'int main() {'
  paste -d ' ' "$T/tf_all" <(addr <"$T/tf_all") |
    sed 's/^\([^ ]*\) \(.*\)$/  std::printf("%s %s\\n", "\1", typeid(decltype(\2)).name());/'
  echo '  return 0;'
  echo '}'
} >"$T/sigs.cc"

# ---- Checks ------------------------------------------------------------------
# Each check is a function run in the background in its own directory; its
# output is shown only if it fails.

check_header_set() {
  sed -e "s|^$TF/third_party/xla/third_party/tsl/||" -e "s|^$TF/||" "$T/tf_hdrs" >tf
  sed -e "s|^$inc/||" "$T/our_hdrs" >ours
  diff -u tf ours
}

check_export_list() {
  echo "TF: $(wc -l <"$T/tf_exports") exported functions, ours: $(wc -l <"$T/our_exports")"
  diff -u "$T/tf_exports" "$T/our_exports"
}

check_ms_list() {
  printf '%s\n' MS_ConfigProtoTextToBinary MS_GraphDefTextToBinary MS_LiveObjects MS_SessionConfig MS_SessionStats \
    MS_SessionWriteTrace MS_Version >want
  grep '^MS_' "$T/our_exports_ms" >got
  diff -u want got
}

check_all_list() {
  diff -u "$T/tf_all" "$T/our_all"
}

check_file_comments() {
  local bad=0 f
  while read -r f; do
    if [ "$(head -n1 "$f")" != "/* mstream: TensorFlow 2.15 C API, ABI-compatible declarations. */" ]; then
      echo "missing header comment: $f"
      bad=1
    fi
    if grep -qi 'copyright\|licensed under' "$f"; then
      echo "license text found in $f"
      bad=1
    fi
  done < <(find "$inc" -name '*.h')
  return $bad
}

check_alone() { # compiler lang std
  local f n=0
  while read -r f; do
    n=$((n + 1))
    printf '#include "%s"\n#include "%s"\ntypedef int not_empty;\n' "${f#$inc/}" "${f#$inc/}" >"one$n.h"
  done < <(find "$inc" -name '*.h' | LC_ALL=C sort)
  echo "$n headers"
  "$1" -x "$2" -std="$3" "${WARN[@]}" "${OURS[@]}" -fsyntax-only one*.h
}

check_modes() {
  local std rc=0
  printf '#include "tensorflow/c/c_api.h"\n#include "tensorflow/c/eager/c_api.h"\n#include "mstream/mstream.h"\n' >all.h
  for std in c99 c11 gnu17; do
    "$CC" -x c -std=$std "${WARN[@]}" -Wstrict-prototypes -Wundef -Wshadow \
      "${OURS[@]}" -fsyntax-only all.h || { echo "fails as $std"; rc=1; }
  done
  for std in c++11 c++17 c++20; do
    "$CXX" -x c++ -std=$std "${WARN[@]}" -Wundef -Wshadow \
      "${OURS[@]}" -fsyntax-only all.h || { echo "fails as $std"; rc=1; }
  done
  return $rc
}

# Builds $src against both header sets, runs both, compares the outputs.
same_output() { # compiler lang std src extra-flags...
  local cc=$1 lang=$2 std=$3 src=$4
  shift 4
  "$cc" -x "$lang" -std="$std" "${WARN[@]}" "${OURS[@]}" "$src" -x none "$@" -o ours &&
    "$cc" -x "$lang" -std="$std" "${WARN[@]}" "${THEIRS[@]}" "$src" -x none "$@" -o tf &&
    ./ours >ours.out && ./tf >tf.out &&
    { echo "$(wc -l <tf.out) lines compared"; diff -u tf.out ours.out; }
}

check_layout_c() { same_output "$CC" c c11 "$here/layout.c"; }
check_layout_cxx() { same_output "$CXX" c++ c++11 "$here/layout.c"; }
check_signatures() { same_output "$CXX" c++ c++11 "$T/sigs.cc"; }

check_allfuncs() { # compiler lang std
  echo "$(wc -l <"$T/tf_all") functions"
  "$1" -x "$2" -std="$3" "${WARN[@]}" "${THEIRS[@]}" -c "$T/allfuncs.c" -o tf.o &&
    "$1" -x "$2" -std="$3" "${WARN[@]}" "${OURS[@]}" -c "$T/allfuncs.c" -o ours.o
}

check_our_list_is_functions() {
  "$CC" -x c -std=c11 "${WARN[@]}" "${OURS[@]}" -c "$T/ourfuncs.c" -o ourfuncs.o
}

check_macro_names() {
  "$CC" -x c -dM -E "${THEIRS[@]}" "$T/top.h" | awk '{print $2}' | sed 's/(.*//' |
    LC_ALL=C sort >tf
  "$CC" -x c -dM -E "${OURS[@]}" "$T/top.h" | awk '{print $2}' | sed 's/(.*//' |
    LC_ALL=C sort >ours
  diff -u tf ours
}

# Expansions of TF's macros, whitespace removed, under each configuration
# of TF_CAPI_EXPORT.
check_macro_expansions() {
  local cfg rc=0
  printf '#include "tensorflow/c/c_api_macros.h"\n@ TF_CAPI_EXPORT @ TF_Bool @ TF_OFFSET_OF_END(T, m)\n' >m1.h
  {
    cat "$T/top.h"
    echo '@ TF_OK TF_CANCELLED TF_UNKNOWN TF_INVALID_ARGUMENT TF_DEADLINE_EXCEEDED'
    echo '@ TF_NOT_FOUND TF_ALREADY_EXISTS TF_PERMISSION_DENIED TF_UNAUTHENTICATED'
    echo '@ TF_RESOURCE_EXHAUSTED TF_FAILED_PRECONDITION TF_ABORTED TF_OUT_OF_RANGE'
    echo '@ TF_UNIMPLEMENTED TF_INTERNAL TF_UNAVAILABLE TF_DATA_LOSS'
    echo '@ TF_PayloadVisitor @ TF_le32toh(x) @ TF_TSTRING_LITTLE_ENDIAN'
    echo '@ TF_ALLOCATOR_ATTRIBUTES_STRUCT_SIZE @ TF_CAPI_EXPORT @ TF_Bool'
  } >m2.h
  for cfg in "" -DTF_CAPI_WEAK -DSWIG -D_WIN32 "-D_WIN32 -DTF_COMPILE_LIBRARY"; do
    # shellcheck disable=SC2086
    "$CC" -x c -E -P $cfg "${THEIRS[@]}" m1.h | grep '^@' | tr -d ' \t' >tf
    # shellcheck disable=SC2086
    "$CC" -x c -E -P $cfg "${OURS[@]}" m1.h | grep '^@' | tr -d ' \t' >ours
    diff -u tf ours || { echo "differs with '$cfg'"; rc=1; }
  done
  "$CC" -x c -E -P "${THEIRS[@]}" m2.h | grep '^@' | tr -d ' \t' >tf
  "$CC" -x c -E -P "${OURS[@]}" m2.h | grep '^@' | tr -d ' \t' >ours
  diff -u tf ours || rc=1
  return $rc
}

# TF_CAPI_WEAK: a program links and runs without the library.
check_weak() {
  printf '#include "tensorflow/c/c_api.h"\n#include "tensorflow/c/eager/c_api.h"\nint main(void) { return TF_Version == 0 && TFE_NewContext == 0 ? 0 : 1; }\n' >weak.c
  "$CC" -std=c11 "${WARN[@]}" -DTF_CAPI_WEAK "${THEIRS[@]}" weak.c -o tf && ./tf &&
    "$CC" -std=c11 "${WARN[@]}" -DTF_CAPI_WEAK "${OURS[@]}" weak.c -o ours && ./ours
}

# C++ callers reference the unmangled C symbols.
check_linkage() {
  printf '#include "tensorflow/c/c_api.h"\n#include "tensorflow/c/eager/c_api.h"\n#include "mstream/mstream.h"\nvoid f() { TF_DeleteStatus(TF_NewStatus()); TFE_DeleteContextOptions(TFE_NewContextOptions()); (void)MS_Version(); }\n' >link.cc
  "$CXX" -std=c++11 "${WARN[@]}" "${OURS[@]}" -c link.cc -o link.o &&
    nm -u link.o | awk '{print $2}' | LC_ALL=C sort >got &&
    printf '%s\n' MS_Version TFE_DeleteContextOptions TFE_NewContextOptions \
      TF_DeleteStatus TF_NewStatus >want && diff -u want got
}

TS_WRAP=-Wl,--wrap=malloc,--wrap=realloc,--wrap=free
check_tstring() { # compiler lang std opt
  same_output "$1" "$2" "$3" "$here/tstring_test.c" -D_GNU_SOURCE -DTS_ARENA "$4" "$TS_WRAP"
}

check_tstring_sanitizers() {
  local san=(-fsanitize=address,undefined -fno-sanitize-recover=all)
  if ! echo 'int main(void){return 0;}' | "$CC" -x c "${san[@]}" - -o probe 2>/dev/null; then
    echo "sanitizers unavailable; skipped"
    return 0
  fi
  "$CC" -std=c99 -O1 -g "${WARN[@]}" "${san[@]}" "${OURS[@]}" -D_GNU_SOURCE \
    "$here/tstring_test.c" -o ours &&
    ASAN_OPTIONS=detect_leaks=1 ./ours >/dev/null
}

# cgo's view of the C API from the official Go bindings (struct layouts,
# function types, constants) must not depend on whose headers it reads.
check_go_bindings() {
  local files
  files=$(grep -l '^import "C"' "$TF"/tensorflow/go/*.go | grep -v '_test\.go$')
  echo "$(echo "$files" | wc -l) Go files"
  # shellcheck disable=SC2086
  go tool cgo -objdir "$PWD/tf" -- "${THEIRS[@]}" $files >/dev/null &&
    go tool cgo -objdir "$PWD/ours" -- "${OURS[@]}" $files >/dev/null &&
    diff -u tf/_cgo_gotypes.go ours/_cgo_gotypes.go
}

# Runs a check in the background, at most $JOBS at a time, in its own
# directory; its output, exit status and duration go next to that directory.
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
names=()
dirs=()
start() { # name function args...
  local name=$1 dir
  shift
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
  dir=$(mktemp -d -p "$T")
  names+=("$name")
  dirs+=("$dir")
  (
    t0=$(date +%s%N)
    cd "$dir" && "$@"
    rc=$?
    echo $(( ($(date +%s%N) - t0) / 1000000 )) >"$dir.ms"
    echo $rc >"$dir.rc"
  ) >"$dir.log" 2>&1 &
}

start "same header files as TF's c_api.h + eager/c_api.h pull in" check_header_set
start "exported function list equals TF's (functions.sh)" check_export_list
start "MS_ extensions declared" check_ms_list
start "same functions incl. TSL_* and inline TF_TString_*" check_all_list
start "one-line header comment, no TF license text" check_file_comments
start "each header compiles alone, included twice (C99)" check_alone "$CC" c c99
start "each header compiles alone, included twice (C++11)" check_alone "$CXX" c++ c++11
start "C99/C11/GNU17/C++11/C++17/C++20, -Wall -Wextra -Werror -pedantic" check_modes
start "layout.c as C11: static asserts, sizes, offsets, enums" check_layout_c
start "layout.c as C++11: also member types" check_layout_cxx
start "address of every TF function compiles against both (C)" check_allfuncs "$CC" c c11
start "address of every TF function compiles against both (C++)" check_allfuncs "$CXX" c++ c++11
start "every name functions.sh prints is a function" check_our_list_is_functions
start "function signatures identical (typeid)" check_signatures
start "same macro names defined" check_macro_names
start "same macro expansions (TF_CAPI_EXPORT configs, codes)" check_macro_expansions
start "TF_CAPI_WEAK gives weak symbols" check_weak
start "C linkage from C++" check_linkage
start "TF_TString behaviour and raw bytes identical (C, -O0)" check_tstring "$CC" c c99 -O0
start "TF_TString behaviour and raw bytes identical (C++, -O2)" check_tstring "$CXX" c++ c++11 -O2
start "TF_TString under ASan/UBSan" check_tstring_sanitizers
if [ $go_bindings = 1 ]; then
  start "TF Go bindings: cgo sees identical types" check_go_bindings
fi

wait
pass=0
fail=0
for i in "${!names[@]}"; do
  d=${dirs[$i]}
  ms=$(cat "$d.ms" 2>/dev/null || echo ?)
  if [ "$(cat "$d.rc" 2>/dev/null)" = 0 ]; then
    pass=$((pass + 1))
    printf 'ok   %-72s %6s ms\n' "${names[$i]}" "$ms"
  else
    fail=$((fail + 1))
    printf 'FAIL %-72s %6s ms\n' "${names[$i]}" "$ms"
    sed 's/^/     /' "$d.log" | head -60
  fi
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
