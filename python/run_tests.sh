#!/bin/sh
# Runs the Python package's tests against this checkout (its python/ first on
# the path, its build/libmstream.so), with build/venv's Python, where
# scripts/setup.sh installs the package, and again with Debian's
# /usr/bin/python3 when it has NumPy (1.24 on bookworm: 0-d feeds once broke
# there only). Each run ends with "N passed, M failed, K skipped".
set -u
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
ms_root=$root . "$root/scripts/venv.sh"
export PYTHONPATH="$root/python${PYTHONPATH:+:$PYTHONPATH}"
export MSTREAM_LIB="${MSTREAM_LIB:-$root/build/libmstream.so}"
rc=0
for py in "$MS_PY" /usr/bin/python3; do
  [ "$py" = /usr/bin/python3 ] && [ "$MS_PY" = /usr/bin/python3 ] && continue
  if ! "$py" -c 'import numpy' 2>/dev/null; then
    echo "python: $py has no NumPy: skipped"
    continue
  fi
  echo "python: $py (NumPy $("$py" -c 'import numpy; print(numpy.__version__)'))"
  "$py" python/tests/run.py || rc=1
done
exit $rc
