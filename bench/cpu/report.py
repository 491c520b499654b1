"""Turns bench/cpu/vs_tf.sh's points into Markdown tables.

    python bench/cpu/report.py [--readme README.md] OUTDIR

OUTDIR is vs_tf.sh's output directory (points.jsonl, run.json, the output
dumps). Sides: ms (mstream) and tf (TF 2.15's C API) through the same C client;
tfpy (TF's Python client), ort (ONNX Runtime) and ov (OpenVINO, f32) through
bench/cpu/peers.py, present when vs_tf.sh found build/peers-venv.

Per (model, batch, threads): each side's median QPS over the rounds with the
p50 / p99 of the round with that median; mstream / TF (both C); the fastest
peer in C-client terms, estimated as TF's C QPS times the best of 1, ORT /
TF-Python and OpenVINO / TF-Python at that point (ORT and OpenVINO are
measured through Python, beside TF's Python client, so only their ratio to
it is like for like), and mstream over it; and each side's largest absolute
difference from TF's output on the same feeds (first request, float32; '!'
marks one above 1e-4 x max(1, max |TF|); '-' where there is nothing to
compare: a model run as a target, or a side that failed). Then geometric
means per model, with "mstream / fastest, unbridged" beside the bridged one:
mstream over the best of TF's C QPS and ORT's and OpenVINO's Python QPS as
measured. The bridge overstates ORT and OpenVINO where TF's Python client
costs much more per call than theirs (small graphs: chain, model_test);
unbridged, their Python overhead counts against them. The two bracket the
like-for-like ratio that C clients for ORT and OpenVINO would give.

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

SIDES = [("ms", "mstream"), ("tf", "TF C"), ("tfpy", "TF Py"), ("ort", "ORT Py"), ("ov", "OpenVINO Py")]
BEGIN, END = "<!-- vs_tf table -->", "<!-- /vs_tf table -->"


def gmean(xs):
    return math.exp(statistics.fmean(math.log(x) for x in xs)) if xs else None


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

    def med(key, side):
        runs = sorted(by.get(key + (side,), []), key=lambda p: p["qps"])
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
    peers = [s for s in ("tfpy", "ort", "ov") if s in dict(present)]
    head = "| model | B | T | " + " | ".join(f"{n} QPS (p50 / p99 ms)" for _, n in present) + " | mstream / TF |"
    if peers:
        head += " mstream / fastest |"
    head += " max abs diff from TF: " + " / ".join(n for s, n in present if s != "tf") + " |"
    lines.append(head)
    lines.append("|---|---:|---:|" + "---:|" * (len(present) + 1 + (1 if peers else 0)) + "---|")
    ratios = collections.defaultdict(lambda: collections.defaultdict(list))
    for key in order:
        model, batch, threads = key
        p = {s: med(key, s) for s, _ in present}
        q = {s: p[s]["qps"] for s in p if p[s] and p[s]["qps"] > 0}
        cells = [f"{p[s]['qps']:.0f} ({p[s]['p50_ms']:.2f} / {p[s]['p99_ms']:.2f})" if p[s] else "failed" for s, _ in present]
        r = ""
        if "ms" in q and "tf" in q:
            r = f"{q['ms'] / q['tf']:.2f}"
            ratios[model]["ms/tf"].append(q["ms"] / q["tf"])
        row = f"| {model} | {batch} | {threads} | " + " | ".join(cells) + f" | {r} |"
        if peers:
            f = ""
            if "ms" in q and "tf" in q and "tfpy" in q:
                best = max([1.0] + [q[s] / q["tfpy"] for s in ("ort", "ov") if s in q])
                f = f"{q['ms'] / (q['tf'] * best):.2f}"
                ratios[model]["ms/fastest"].append(q["ms"] / (q["tf"] * best))
            if "ms" in q and "tf" in q:
                ratios[model]["ms/fastest raw"].append(q["ms"] / max(q.get(s, 0) for s in ("tf", "ort", "ov")))
            for s in ("ort", "ov"):
                if s in q and "tfpy" in q:
                    ratios[model][s + "/tfpy"].append(q[s] / q["tfpy"])
            row += f" {f} |"
        row += " " + " / ".join(diff(model, batch, s) for s, _ in present if s != "tf") + " |"
        lines.append(row)
    lines.append("")
    cols = [("ms/tf", "mstream / TF (C)")]
    if peers:
        cols += [("ort/tfpy", "ORT / TF (Python)"), ("ov/tfpy", "OpenVINO / TF (Python)"), ("ms/fastest", "mstream / fastest"),
                 ("ms/fastest raw", "mstream / fastest, unbridged")]
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
        f"{r['load_before']} before and {r['load_after']} after, `ROUNDS={r['rounds']} DUR={r['dur']}` "
        f"(`{r['command']}`); {r['versions']}.",
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
