"""Turns bench/cpu/vs_tf.sh's points into a Markdown table.

    python bench/cpu/report.py POINTS.jsonl OUTDIR

Per (model, batch, threads): each side's median QPS over the rounds, the p50
and p99 of the round with that median, mstream/TF, and how far apart the two
libraries' outputs were on the same feeds (largest absolute difference over
the first request's output, float32; '-' for a model run as a target). Then
the geometric mean of mstream/TF per model.
"""
import collections
import json
import math
import os
import statistics
import sys

import numpy as np


def main():
    pts, outdir = sys.argv[1], sys.argv[2]
    by = collections.defaultdict(list)
    order = []
    with open(pts) as f:
        for line in f:
            p = json.loads(line)
            key = (p["model"], p["batch"], p["threads"])
            if key not in order:
                order.append(key)
            by[key + (p["side"],)].append(p)

    def med(key, side):
        runs = sorted(by.get(key + (side,), []), key=lambda p: p["qps"])
        return runs[len(runs) // 2] if runs else None

    def diff(model, batch):
        a = os.path.join(outdir, f"out_{model}_ms.{batch}")
        b = os.path.join(outdir, f"out_{model}_tf.{batch}")
        if not (os.path.exists(a) and os.path.exists(b)):
            return "-"
        x, y = np.fromfile(a, np.float32), np.fromfile(b, np.float32)
        if x.shape != y.shape:
            return f"size {x.size} vs {y.size}"
        return f"{np.max(np.abs(x - y)) if x.size else 0:.1e}"

    print("| model | B | T | mstream QPS | p50 / p99 ms | TF QPS | p50 / p99 ms | mstream / TF | max abs diff |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    ratios = collections.defaultdict(list)
    for key in order:
        ms, tf = med(key, "ms"), med(key, "tf")
        model, batch, threads = key
        cell = lambda p: (f"{p['qps']:.0f}", f"{p['p50_ms']:.3f} / {p['p99_ms']:.3f}") if p else ("failed", "")
        a, b = cell(ms), cell(tf)
        r = ""
        if ms and tf and tf["qps"] > 0:
            ratios[model].append(ms["qps"] / tf["qps"])
            r = f"{ms['qps'] / tf['qps']:.2f}"
        print(f"| {model} | {batch} | {threads} | {a[0]} | {a[1]} | {b[0]} | {b[1]} | {r} | {diff(model, batch)} |")
    print()
    print("| model | geometric mean of mstream / TF |")
    print("|---|---:|")
    for model in dict.fromkeys(k[0] for k in order):
        rs = ratios.get(model)
        g = f"{math.exp(statistics.fmean(math.log(x) for x in rs)):.2f}" if rs else "failed"
        print(f"| {model} | {g} |")


if __name__ == "__main__":
    main()
