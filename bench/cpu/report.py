"""Turns bench/cpu/vs_tf.sh's points into Markdown tables.

    python bench/cpu/report.py [--readme README.md] OUTDIR

OUTDIR is vs_tf.sh's output directory (points.jsonl, run.json, the output
dumps). Sides, each library through the same closed-loop C client
(bench/gpu/closedloop.h): ms (mstream), tf (TF 2.15's C API), ort (ONNX
Runtime's C API), ov (OpenVINO's C API, f32); and, when vs_tf.sh ran them,
each library's Python client (bench/cpu/peers.py): mspy, tfpy, ortpy, ovpy.

Per (model, batch, threads): each side's median QPS over the rounds with the
p50 / p99 of the round with that median, the rounds taken from one placement
of the vCPUs that every side met (near first, then far: placement) where
there is one, else all of them; mstream / TF and mstream / fastest,
C client against C client (the fastest of TF, ORT and OpenVINO); mstream's
Python client over the fastest of the other Python clients (Python against
Python: each pays its own client's cost per call); and each side's largest
absolute difference from TF's output (C client) on the same feeds (first
request, float32; '!' marks one above 1e-4 x max(1, max |TF|); '-' where
there is nothing to compare: a model run as a target, or a side that
failed); a cell marked † ran while CPUs 0 and 1 sat far apart (FAR_NS).
Then geometric means of those ratios per model, over every point and over
the points with B <= 16 (the issue's goal: ahead of the fastest
there, at least TF's at B = 256).

--readme splices the tables, with the run's settings, between README.md's
markers "<!-- vs_tf table -->" and "<!-- /vs_tf table -->".
"""
import collections
import json
import math
import os
import statistics
import sys

import numpy as np

SIDES = [("ms", "mstream C"), ("tf", "TF C"), ("ort", "ORT C"), ("ov", "OpenVINO C"),
         ("mspy", "mstream Py"), ("tfpy", "TF Py"), ("ortpy", "ORT Py"), ("ovpy", "OpenVINO Py")]
C_PEERS, PY_PEERS = ("tf", "ort", "ov"), ("tfpy", "ortpy", "ovpy")
BEGIN, END = "<!-- vs_tf table -->", "<!-- /vs_tf table -->"


def gmean(xs):
    return math.exp(statistics.fmean(math.log(x) for x in xs)) if xs else None


# FAR_NS: a cache-line round trip between CPUs 0 and 1 (bench/cpu/corelat.c)
# this long or longer, read before or after a run, marks its cell with FAR:
# the run met (at least in part) the placement of the vCPUs far apart, in
# which a second thread is worth less, to every side.
FAR_NS, FAR = 150, "†"


def far(point):
    return FAR if max(point.get("corelat_ns", [0])) >= FAR_NS else ""


def placement(runs_by_side):
    """The placement ("" near, FAR far) that every side's runs of one point
    met at least once, near first; None where there is none. A ratio of
    two sides is then one of runs in the same placement (a second thread
    is worth 1.2-2x less far apart, to every library)."""
    for cls in ("", FAR):
        if all(any(far(p) == cls for p in runs) for runs in runs_by_side if runs):
            return cls
    return None


def tables(outdir):
    by = collections.defaultdict(list)
    order = []
    with open(os.path.join(outdir, "points.jsonl")) as f:
        for line in f:
            p = json.loads(line)
            key = (p["model"], p["batch"], p["threads"])
            if key not in order:
                order.append(key)
            by[key + (p["side"],)].append(p)
    present = [s for s in SIDES if any(k[3] == s[0] for k in by)]

    def med(key, side, cls):
        runs = sorted((p for p in by.get(key + (side,), []) if cls is None or far(p) == cls), key=lambda p: p["qps"])
        return runs[len(runs) // 2] if runs else None

    def diff(model, batch, side):
        a = os.path.join(outdir, f"out_{model}_{side}.{batch}")
        b = os.path.join(outdir, f"out_{model}_tf.{batch}")
        if not (os.path.exists(a) and os.path.exists(b)):
            return "-"
        x, y = np.fromfile(a, np.float32), np.fromfile(b, np.float32)
        if x.shape != y.shape:
            return f"size {x.size} vs {y.size}"
        d = float(np.max(np.abs(x - y))) if x.size else 0.0
        ref = float(np.max(np.abs(y))) if y.size else 0.0
        return f"{d:.0e}" + ("!" if d > 1e-4 * max(1.0, ref) else "")

    lines = []
    have = dict(present)
    c_peers = [s for s in ("ort", "ov") if s in have]
    py = "mspy" in have and any(s in have for s in PY_PEERS)
    ratio_cols = ["mstream / TF (C)"] + (["mstream / fastest (C)"] if c_peers else []) + (["mstream Py / fastest Py"] if py else [])
    head = "| model | B | T | " + " | ".join(f"{n} QPS (p50 / p99 ms)" for _, n in present) + " | " + " | ".join(ratio_cols) + " |"
    head += " max abs diff from TF C: " + " / ".join(n for s, n in present if s != "tf") + " |"
    lines.append(head)
    lines.append("|---|---:|---:|" + "---:|" * (len(present) + len(ratio_cols)) + "---|")
    ratios = collections.defaultdict(lambda: collections.defaultdict(list))

    def add(model, batch, name, x):
        ratios[model][name].append(x)
        if batch <= 16:
            ratios[model][name + " B<=16"].append(x)

    for key in order:
        model, batch, threads = key
        cls = placement([by.get(key + (s,), []) for s, _ in present])
        p = {s: med(key, s, cls) for s, _ in present}
        q = {s: p[s]["qps"] for s in p if p[s] and p[s]["qps"] > 0}
        cells = [f"{p[s]['qps']:.0f}{far(p[s])} ({p[s]['p50_ms']:.2f} / {p[s]['p99_ms']:.2f})" if p[s] else "failed" for s, _ in present]
        r = []
        if "ms" in q and "tf" in q:
            r.append(f"{q['ms'] / q['tf']:.2f}")
            add(model, batch, "ms/tf", q["ms"] / q["tf"])
        else:
            r.append("")
        for s in c_peers:
            if s in q and "tf" in q:
                add(model, batch, s + "/tf", q[s] / q["tf"])
        if c_peers:
            best = max((q[s] for s in C_PEERS if s in q), default=0)
            if "ms" in q and best:
                r.append(f"{q['ms'] / best:.2f}")
                add(model, batch, "ms/fastest", q["ms"] / best)
            else:
                r.append("")
        if py:
            best = max((q[s] for s in PY_PEERS if s in q), default=0)
            if "mspy" in q and best:
                r.append(f"{q['mspy'] / best:.2f}")
                add(model, batch, "mspy/fastest", q["mspy"] / best)
            else:
                r.append("")
        row = f"| {model} | {batch} | {threads} | " + " | ".join(cells) + " | " + " | ".join(r) + " |"
        row += " " + " / ".join(diff(model, batch, s) for s, _ in present if s != "tf") + " |"
        lines.append(row)
    lines.append("")
    cols = [("ms/tf", "mstream / TF (C)")]
    cols += [(s + "/tf", f"{have[s].removesuffix(' C')} / TF (C)") for s in c_peers]
    if c_peers:
        cols += [("ms/fastest", "mstream / fastest (C)"), ("ms/fastest B<=16", "mstream / fastest (C), B <= 16")]
    if py:
        cols += [("mspy/fastest", "mstream Py / fastest Py")]
    lines.append("| model | " + " | ".join(n for _, n in cols) + " |")
    lines.append("|---|" + "---:|" * len(cols))
    for model in dict.fromkeys(k[0] for k in order):
        g = [gmean(ratios[model][c]) for c, _ in cols]
        lines.append(f"| {model} | " + " | ".join(f"{x:.2f}" if x is not None else "-" for x in g) + " |")
    return lines


def settings(outdir):
    try:
        with open(os.path.join(outdir, "run.json")) as f:
            r = json.load(f)
    except OSError:
        return []
    return [
        f"Run of {r['date']} at `{r['commit']}` on {r['cores']} cores ({r['cpu']}), load average "
        f"{r['load_before']} before and {r['load_after']} after, `ROUNDS={r['rounds']} DUR={r['dur']}`"
        + (f", each client process warmed up {r['warm']} s before its first point" if float(r.get("warm") or 0) > 0 else "")
        + f" (`{r['command']}`); {r['versions']}. {FAR} marks a cell whose run (the median round's) "
        f"met the vCPUs far apart: a cache line's round trip between CPUs 0 and 1 "
        f"(`bench/cpu/corelat.c`) of {FAR_NS} ns or more before or after it (near: 50-70 ns). "
        f"Each side's median is over the rounds of one placement that every side of the row met, "
        f"near first, where there is one; a row whose marks differ had none.",
        "",
    ]


def main():
    args = sys.argv[1:]
    readme = None
    if args and args[0] == "--readme":
        readme, args = args[1], args[2:]
    outdir = args[0]
    lines = tables(outdir)
    print("\n".join(lines))
    if readme:
        text = open(readme).read()
        a, b = text.find(BEGIN), text.find(END)
        if a < 0 or b < a:
            sys.exit(f"report: {readme} has no {BEGIN} ... {END} markers")
        body = "\n".join([BEGIN, ""] + settings(outdir) + lines + ["", END])
        with open(readme, "w") as f:
            f.write(text[:a] + body + text[b + len(END):])
        print(f"report: wrote the table into {readme}", file=sys.stderr)


if __name__ == "__main__":
    main()
