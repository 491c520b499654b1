#!/bin/sh
# Runs the Python package's tests against build/libmstream.so (or $MSTREAM_LIB).
# Needs Debian's python3 with python3-numpy: /usr/bin/python3.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
exec /usr/bin/python3 -m unittest discover -s python/tests -v "$@"
