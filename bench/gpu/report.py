"""Summarises a GPU benchmark run (bench/gpu/run.sh) as Markdown.

  python3 report.py OUT_DIR

Reads OUT_DIR/ours.jsonl (loadgen points tagged with model, config, repeat),
OUT_DIR/peers_torch.json (the PyTorch peer, when it ran) and the nvidia-smi
samples smi_<model>_<config>_<rep>.csv. Medians over repeats. The headline
cell per (model, batch) is the best QPS whose p99 is at most P99_MS (2 ms).
Configs ending in p ran with MSTREAM_GPU_POOL on every GPU of the host; they
are left out of the one-GPU tables and compared, in a table of their own,
with the same config without p (GPU:0 alone).
"""
import collections
import glob
import json
import os
import re
import statistics
import sys

P99_MS = float(os.environ.get("P99_MS", "2"))


def med(xs):
    return statistics.median(xs) if xs else None


def load_ours(d):
    pts = collections.defaultdict(list)
    path = os.path.join(d, "ours.jsonl")
    if not os.path.exists(path):
        return {}
    for line in open(path):
        r = json.loads(line)
        if "stats" in r:
            continue
        pts[(r["model"], r["config"], r["batch"], r["threads"])].append(r)
    return {k: {f: med([r[f] for r in v]) for f in ("qps", "p50_ms", "p99_ms")} for k, v in pts.items()}


def load_pool_runs(d):
    """Per (model, config), the Runs each GPU of the pool took part in, summed
    over repeats, from the MS_SessionStats line loadgen ends with."""
    out = collections.defaultdict(lambda: collections.Counter())
    path = os.path.join(d, "ours.jsonl")
    if not os.path.exists(path):
        return out
    for line in open(path):
        r = json.loads(line)
        pool = r.get("stats", {}).get("gpu_pool") if isinstance(r.get("stats"), dict) else None
        if pool:
            for dev, n in pool.get("runs", {}).items():
                out[(r.get("model"), r.get("config"))][dev.split("device:")[-1]] += n
    return out


def load_peers(d):
    path = os.path.join(d, "peers_torch.json")
    if not os.path.exists(path):
        return {}
    out = {}
    for r in json.load(open(path)):
        out[(r["model"], r["mode"], r["batch"], r["threads"])] = r
    return out


def smi(d, model, cfg):
    util, mem = [], []
    for f in glob.glob(os.path.join(d, "smi_%s_%s_*.csv" % (model, cfg))):
        for line in open(f):
            try:
                u, m = [float(x) for x in line.split(",")]
            except ValueError:
                continue
            util.append(u)
            mem.append(m)
    return (statistics.mean(util) if util else None, max(mem) if mem else None)


def best(points, p99=P99_MS):
    """Best (qps, threads, p99) among points with p99 <= the bound."""
    ok = [(p["qps"], t, p["p99_ms"]) for t, p in points if p["p99_ms"] is not None and p["p99_ms"] <= p99]
    return max(ok) if ok else None


def fmt(x, nd=0):
    return "-" if x is None else ("%.*f" % (nd, x))


def main():
    d = sys.argv[1]
    ours, peers = load_ours(d), load_peers(d)
    models = sorted({k[0] for k in ours})
    configs = sorted({k[1] for k in ours}, key=lambda c: (int(re.match(r"g(\d+)", c).group(1)), c))
    pooled = [c for c in configs if c.endswith("p")]
    one_gpu = [c for c in configs if not c.endswith("p")]
    print("## Points (median of repeats): QPS / p99 ms\n")
    for m in models:
        batches = sorted({k[2] for k in ours if k[0] == m})
        threads = sorted({k[3] for k in ours if k[0] == m})
        print("### %s\n" % m)
        print("| config | B | " + " | ".join("T=%d" % t for t in threads) + " | GPU util % | peak MiB |")
        print("|---|---|" + "---|" * len(threads) + "---|---|")
        for c in configs:
            u, mem = smi(d, m, c)
            for b in batches:
                cells = []
                for t in threads:
                    p = ours.get((m, c, b, t))
                    cells.append("-" if p is None else "%s / %s" % (fmt(p["qps"]), fmt(p["p99_ms"], 2)))
                print("| %s | %d | %s | %s | %s |" % (c, b, " | ".join(cells), fmt(u), fmt(mem)))
        print()
    if not any(k[1] == "g1" for k in ours):
        # A run without g1 (bench_all.sh's POOL_ONLY=1): only the pool's table.
        pool_table(d, ours, models, pooled)
        return
    print("## Best QPS with p99 <= %g ms, per (model, batch)\n" % P99_MS)
    print("| model | B | g1 | best multi-group (config, T) | x g1 | best peer (mode, T) | ours / peer |")
    print("|---|---|---|---|---|---|---|")
    for m in models:
        for b in sorted({k[2] for k in ours if k[0] == m}):
            def pts(c):
                return [(k[3], v) for k, v in ours.items() if k[0] == m and k[1] == c and k[2] == b]
            g1 = best(pts("g1"))
            multi = None
            for c in one_gpu:
                if c == "g1":
                    continue
                r = best(pts(c))
                if r and (multi is None or r[0] > multi[0][0]):
                    multi = (r, c)
            peer = None
            for (pm, mode, pb, pt), r in peers.items():
                if pm == m and pb == b and r.get("p99_ms") is not None and r["p99_ms"] <= P99_MS:
                    if peer is None or r["qps"] > peer[0]:
                        peer = (r["qps"], mode, pt)
            ours_best = max([x for x in [g1[0] if g1 else None, multi[0][0] if multi else None] if x is not None], default=None)
            print("| %s | %d | %s | %s | %s | %s | %s |" % (
                m, b, fmt(g1[0]) if g1 else "-",
                "%s (%s, T=%d)" % (fmt(multi[0][0]), multi[1], multi[0][1]) if multi else "-",
                fmt(multi[0][0] / g1[0], 2) if multi and g1 else "-",
                "%s (%s, T=%d)" % (fmt(peer[0]), peer[1], peer[2]) if peer else "-",
                fmt(ours_best / peer[0], 2) if peer and ours_best else "-"))
    print()
    print("## Multi-group over single group at T >= 4 (same B, same T, p99 unbounded)\n")
    print("| model | B | T | g1 QPS | best config | QPS | ratio |")
    print("|---|---|---|---|---|---|---|")
    for m in models:
        for b in sorted({k[2] for k in ours if k[0] == m}):
            if b > 64:
                continue
            for t in sorted({k[3] for k in ours if k[0] == m}):
                if t < 4 or (m, "g1", b, t) not in ours:
                    continue
                g1 = ours[(m, "g1", b, t)]["qps"]
                cand = [(ours[(m, c, b, t)]["qps"], c) for c in one_gpu if c != "g1" and (m, c, b, t) in ours]
                if cand:
                    q, c = max(cand)
                    print("| %s | %d | %d | %s | %s | %s | %.2f |" % (m, b, t, fmt(g1), c, fmt(q), q / g1))
    pool_table(d, ours, models, pooled)


def pool_table(d, ours, models, pooled):
    """The pool configs next to the same configs on GPU:0 alone."""
    if not pooled:
        return
    print()
    print("## Every GPU as one pool (MSTREAM_GPU_POOL) over GPU:0 alone, best QPS with p99 <= %g ms\n" % P99_MS)
    print("| model | B | config | 1 GPU (T) | all GPUs (T) | x 1 GPU |")
    print("|---|---|---|---|---|---|")
    for m in models:
        for b in sorted({k[2] for k in ours if k[0] == m}):
            def pts(c):
                return [(k[3], v) for k, v in ours.items() if k[0] == m and k[1] == c and k[2] == b]
            for c in pooled:
                one, pool = best(pts(c[:-1])), best(pts(c))
                print("| %s | %d | %s / %s | %s | %s | %s |" % (
                    m, b, c[:-1], c,
                    "%s (T=%d)" % (fmt(one[0]), one[1]) if one else "-",
                    "%s (T=%d)" % (fmt(pool[0]), pool[1]) if pool else "-",
                    fmt(pool[0] / one[0], 2) if one and pool else "-"))
    runs = load_pool_runs(d)
    if runs:
        print()
        print("Runs each GPU took part in (MS_SessionStats' gpu_pool at the end of each loadgen run, summed over repeats):\n")
        print("| model | config | runs per GPU |")
        print("|---|---|---|")
        for (m, c), per in sorted(runs.items()):
            print("| %s | %s | %s |" % (m, c, " ".join("%s=%d" % kv for kv in sorted(per.items()))))


if __name__ == "__main__":
    main()
