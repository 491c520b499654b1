#!/bin/sh
# Per-op throughput of the CPU kernels next to NumPy on the same machine.
#   bench/ops/run.sh            # prints the Markdown table of README.md
# Knobs: COUNT (go -count, default 5), BENCHTIME (default 30x), RUNS (NumPy
# runs per case, default 30), PYTHON (default /usr/bin/python3), OPS (a
# substring filter on case names).
set -e
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-/usr/bin/python3}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if [ -x bench/ops/ops.test ]; then
	# A prebuilt test binary (go test -c) for machines without Go.
	(cd bench/ops && ./ops.test -test.run '^$' -test.bench Ops -test.benchtime "${BENCHTIME:-30x}" -test.count "${COUNT:-5}") > "$out/go.txt"
else
	go test ./bench/ops -run '^$' -bench Ops -benchtime "${BENCHTIME:-30x}" -count "${COUNT:-5}" > "$out/go.txt"
fi
"$PYTHON" bench/ops/numpy_peer.py "${RUNS:-30}" > "$out/np.txt"
grep '^cpu:' "$out/go.txt" | head -1
"$PYTHON" bench/ops/table.py "$out/go.txt" "$out/np.txt"
