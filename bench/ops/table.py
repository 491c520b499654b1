#!/usr/bin/env python3
"""Merges `go test -bench Ops` output (stdin of the first file argument) and
numpy_peer.py output into the Markdown table of README.md: GB/s per case,
the median over -count runs, for each vec level and pool."""
import collections
import re
import statistics
import sys

go = collections.defaultdict(list)
for line in open(sys.argv[1]):
    m = re.match(r"BenchmarkOps/(.+)/(base|avx2|avx512)/(serial|pool)-\d+\s+\d+\s+[\d.]+ ns/op\s+([\d.]+) MB/s", line)
    if m:
        go[(m.group(1).replace("_", " "), m.group(2), m.group(3))].append(float(m.group(4)) / 1000)
peer = {}
for line in open(sys.argv[2]):
    name, gbs = line.rstrip("\n").split("\t")
    peer[name] = float(gbs)

levels = [l for l in ("base", "avx2", "avx512") if any(k[1] == l for k in go)]
best = levels[-1]
cols = [(l, "serial") for l in levels] + [(best, "pool")]
print("| Op | NumPy GB/s | " + " | ".join("ours %s, %s" % (l, "1 thread" if p == "serial" else "pool") for l, p in cols) + " | pool / NumPy |")
print("| --- | ---: | " + " | ".join("---:" for _ in cols) + " | ---: |")
for name in peer:
    vals = [statistics.median(go[(name, l, p)]) if go.get((name, l, p)) else float("nan") for l, p in cols]
    print("| %s | %.2f | %s | %.2fx |" % (name, peer[name], " | ".join("%.2f" % v for v in vals), vals[-1] / peer[name]))
