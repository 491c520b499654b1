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
if [ -n "$missing" ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "scripts/setup.sh: installing$missing" >&2
  $sudo apt-get update
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y $missing
fi

# The project's Python environment, build/venv: real TensorFlow 2.15.1 (the ABI
# we claim, pinned) is the tests' oracle and the CPU benchmarks' peer, and NumPy
# comes from the same place. When TF is installed build/venv/.tf-ok exists;
# when it cannot be (no package registry) the suites that need it say
# "skipped: no TensorFlow" (scripts/venv.sh) and the rest runs.
root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/build/venv"
tfver=2.15.1
# install_client installs python/ (the mstream package) into build/venv,
# editable, so the README's Python example imports it; NumPy, its declared
# dependency, is there already (TensorFlow brings it). It is a no-op when
# build/venv already imports this checkout's package.
install_client() {
  [ -x "$venv/bin/python" ] || return 0
  if (cd / && "$venv/bin/python" -c 'import mstream, os, sys; sys.exit(os.path.realpath(mstream.__file__) != os.path.realpath(sys.argv[1]))' \
      "$root/python/mstream/__init__.py") 2>/dev/null; then
    return 0
  fi
  echo "scripts/setup.sh: installing the Python client (pip install -e python) into $venv" >&2
  "$venv/bin/pip" install --disable-pip-version-check --no-build-isolation -q -e "$root/python" >&2 ||
    echo "scripts/setup.sh: the Python client did not install; python/run_tests.sh still runs it from python/" >&2
}
# The CPU kernels' libraries, loaded at run time: a current OpenBLAS
# (scipy-openblas32, OpenBLAS 0.3.34; kernels/cpu/blas) and oneDNN 3.2 (the
# onednn-cpu-gomp wheel, lib/libdnnl.so.3; kernels/cpu/dnnl). Without them
# mstream runs on the system's OpenBLAS and its own convolutions, and says so.
ms_kernel_libs() {
  [ -x "$venv/bin/pip" ] || return 0
  if ! "$venv/bin/python" -c 'import scipy_openblas32' 2>/dev/null; then
    echo "scripts/setup.sh: installing scipy-openblas32 into $venv" >&2
    "$venv/bin/pip" install --disable-pip-version-check --progress-bar off -q --no-deps \
      "scipy-openblas32==0.3.34.481.3" ||
      echo "scripts/setup.sh: scipy-openblas32 did not install; mstream uses the system OpenBLAS" >&2
  fi
  if [ ! -f "$venv/lib/libdnnl.so.3" ]; then
    echo "scripts/setup.sh: installing onednn-cpu-gomp into $venv" >&2
    "$venv/bin/pip" install --disable-pip-version-check --progress-bar off -q --no-deps \
      "onednn-cpu-gomp==2023.2.0" ||
      echo "scripts/setup.sh: onednn-cpu-gomp did not install; mstream's own convolutions run" >&2
  fi
}
if [ -f "$venv/.tf-ok" ] && [ "$(cat "$venv/.tf-ok")" = "$tfver" ]; then
  install_client
  ms_kernel_libs
  exit 0
fi
# TF 2.15 supports Python 3.9 to 3.11: take the first such interpreter.
py=""
for cand in python3.11 python3.10 python3.9 python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null 2>&1 &&
     "$cand" -c 'import sys; sys.exit(not ((3, 9) <= sys.version_info[:2] <= (3, 11)))' 2>/dev/null; then
    py=$cand; break
  fi
done
if [ -z "$py" ]; then
  echo "scripts/setup.sh: no Python 3.9-3.11 for TensorFlow 2.15; the TF suites will be skipped" >&2
  exit 0
fi
if [ ! -x "$venv/bin/python" ]; then
  echo "scripts/setup.sh: making $venv with $("$py" -c 'import sys; print(sys.executable, sys.version.split()[0])')" >&2
  mkdir -p "$root/build"
  if ! "$py" -m venv "$venv" 2>/dev/null; then
    # Debian's python3 needs python3-venv for ensurepip.
    rm -rf "$venv"
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get install -y python3-venv >&2 || true
    "$py" -m venv "$venv" || { echo "scripts/setup.sh: cannot make $venv; the TF suites will be skipped" >&2; exit 0; }
  fi
fi
echo "scripts/setup.sh: installing tensorflow-cpu==$tfver into $venv (about 1.3 GB, one minute or more)" >&2
# pip names each package as it collects and installs it: the progress.
if "$venv/bin/pip" install --disable-pip-version-check --progress-bar off "tensorflow-cpu==$tfver" >&2 &&
   "$venv/bin/python" -c 'import tensorflow as tf, sys; sys.exit(tf.__version__ != sys.argv[1])' "$tfver" 2>/dev/null; then
  echo "$tfver" > "$venv/.tf-ok"
  echo "scripts/setup.sh: TensorFlow $tfver ready in $venv" >&2
else
  rm -f "$venv/.tf-ok"
  echo "scripts/setup.sh: tensorflow-cpu==$tfver did not install; the TF suites will be skipped" >&2
fi
install_client
ms_kernel_libs
