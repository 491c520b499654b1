#!/bin/sh
# Conv2D GFLOP/s of the CPU kernel next to a direct Go loop and NumPy
# im2col + matmul (OpenBLAS) on the same machine.
#   bench/conv/run.sh           # prints the Markdown table of bench/ops/README.md "Conv"
# Knobs: COUNT (go -count, default 3), BENCHTIME (default 5x), RUNS (NumPy
# runs per layer, default 10), PYTHON (default /usr/bin/python3), LAYERS (a
# substring filter on layer names), THREADS (when set, OpenBLAS threads and
# GOMAXPROCS for both sides; unset, each uses every CPU).
set -e
cd "$(dirname "$0")/../.."
PYTHON=${PYTHON:-/usr/bin/python3}
if [ -n "$THREADS" ]; then
	export OPENBLAS_NUM_THREADS=$THREADS GOMAXPROCS=$THREADS
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
if [ -x bench/conv/conv.test ]; then
	# A prebuilt test binary (go test -c) for machines without Go.
	(cd bench/conv && ./conv.test -test.run '^$' -test.bench Conv2D -test.benchtime "${BENCHTIME:-5x}" -test.count "${COUNT:-3}") > "$out/go.txt"
else
	go test ./bench/conv -run '^$' -bench Conv2D -benchtime "${BENCHTIME:-5x}" -count "${COUNT:-3}" > "$out/go.txt"
fi
"$PYTHON" bench/conv/numpy_peer.py "${RUNS:-10}" > "$out/np.txt"
grep '^cpu:' "$out/go.txt" | head -1
"$PYTHON" - "$out/go.txt" "$out/np.txt" <<'PY'
import re, statistics, sys
go = {}
for line in open(sys.argv[1]):
    m = re.match(r"BenchmarkConv2D/(kernel|direct)/(\S+?)(-\d+)?\s.*?([\d.]+) GFLOP/s", line)
    if m:
        go.setdefault((m.group(1), m.group(2).replace("_", " ")), []).append(float(m.group(4)))
np_ = dict(l.rstrip("\n").split("\t") for l in open(sys.argv[2]))
print("| layer | kernel GFLOP/s | direct Go loop | NumPy im2col+matmul | kernel / NumPy |")
print("| --- | ---: | ---: | ---: | ---: |")
for name, v in np_.items():
    k = statistics.median(go.get(("kernel", name), [float("nan")]))
    d = go.get(("direct", name))
    d = "%.2f" % statistics.median(d) if d else "-"
    print("| %s | %.2f | %s | %s | %.2f |" % (name, k, d, v, k / float(v)))
PY
