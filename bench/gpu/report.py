"""Summarises a GPU benchmark run (bench/gpu/run.sh) as Markdown.

  python3 report.py OUT_DIR [--plot FILE.png]

Reads OUT_DIR/ours.jsonl (loadgen points tagged with model, config, repeat;
ours.jsonl.gz in a results folder), OUT_DIR/peers_torch.json (the PyTorch
peer, when it ran) and the nvidia-smi samples smi_<model>_<config>_<rep>.csv.
Medians over repeats. The headline table has, per (model, batch), a column
per configuration: its best QPS whose p99 is at most P99_MS (2 ms), the
client threads T of that point, and the GPU utilisation and peak device
memory nvidia-smi saw during that point (samples carry timestamps and
points their window since 2026-11-26; older runs give the configuration's
figures over its whole run, marked *). Then the best peer and two ratios:
our default configurations (g<N>: CUDA graphs on, the default) over the
peer, and stream groups without graphs (configs with ng: NVIDIA's feature
set) over the peer; in runs from before graphs were the default, cg
configs count as default and configs without cg as graphs off.
Configs ending in p ran with MSTREAM_GPU_POOL on every GPU of the host; they
are left out of the one-GPU tables and compared, in a table of their own,
with the same config without p (GPU:0 alone).

--plot draws QPS against p99 for DLRM-small at B=16 (PLOT_MODEL,
PLOT_BATCH), one line per configuration over T and one per peer mode, into
FILE.png (matplotlib; bench/gpu/report.sh installs it in a venv of its
own and runs this).
"""
import collections
import datetime
import glob
import gzip
import json
import os
import re
import statistics
import sys

P99_MS = float(os.environ.get("P99_MS", "2"))


def med(xs):
    return statistics.median(xs) if xs else None


def ours_lines(d):
    """The lines of ours.jsonl, or of ours.jsonl.gz in a results folder."""
    path = os.path.join(d, "ours.jsonl")
    if os.path.exists(path):
        return list(open(path))
    if os.path.exists(path + ".gz"):
        return gzip.open(path + ".gz", "rt").read().splitlines()
    return []


def load_ours(d):
    """Per (model, config, batch, threads): medians of qps, p50_ms, p99_ms
    over repeats, and the points' wall-clock windows (when loadgen gave
    them) under "windows"."""
    pts = collections.defaultdict(list)
    for line in ours_lines(d):
        r = json.loads(line)
        if "stats" in r:
            continue
        pts[(r["model"], r["config"], r["batch"], r["threads"])].append(r)
    out = {}
    for k, v in pts.items():
        p = {f: med([r[f] for r in v]) for f in ("qps", "p50_ms", "p99_ms")}
        p["windows"] = [(r["t0"], r["t1"]) for r in v if "t0" in r]
        out[k] = p
    return out


def load_pool_runs(d):
    """Per (model, config), the Runs each GPU of the pool took part in, summed
    over repeats, from the MS_SessionStats line loadgen ends with."""
    out = collections.defaultdict(lambda: collections.Counter())
    for line in ours_lines(d):
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


def smi_samples(d, model, cfg):
    """nvidia-smi's samples for a configuration's runs: (time or None,
    utilisation %, memory used MiB). Older runs sampled without a
    timestamp."""
    out = []
    for f in glob.glob(os.path.join(d, "smi_%s_%s_*.csv" % (model, cfg))):
        for line in open(f):
            parts = [x.strip() for x in line.split(",")]
            try:
                if len(parts) == 3:
                    t = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
                    out.append((t, float(parts[1]), float(parts[2])))
                elif len(parts) == 2:
                    out.append((None, float(parts[0]), float(parts[1])))
            except ValueError:
                continue
    return out


def smi(d, model, cfg, windows=None):
    """Mean utilisation and peak memory over the samples inside windows
    (a point's), else over the configuration's whole run; the third value
    says whether the figures are the point's own."""
    samples = smi_samples(d, model, cfg)
    if windows:
        inside = [s for s in samples if s[0] is not None and any(a <= s[0] <= b for a, b in windows)]
        if inside:
            return statistics.mean(s[1] for s in inside), max(s[2] for s in inside), True
    if not samples:
        return None, None, False
    return statistics.mean(s[1] for s in samples), max(s[2] for s in samples), False


def best(points, p99=P99_MS):
    """Best (qps, threads, p99) among points with p99 <= the bound."""
    ok = [(p["qps"], t, p["p99_ms"]) for t, p in points if p["p99_ms"] is not None and p["p99_ms"] <= p99]
    return max(ok) if ok else None


def graphs_default(configs):
    """Which configs ran with CUDA graphs: every one without ng in a run
    that has ng configs (graphs on by default), else (an older run) those
    with cg."""
    new_style = any("ng" in c for c in configs)
    return {c: ("ng" not in c) if new_style else ("cg" in c) for c in configs}


def is_default(c, graphs):
    """A default configuration: N groups and nothing else but graphs."""
    return graphs[c] and re.fullmatch(r"g\d+(cg)?", c) is not None


def fmt(x, nd=0):
    return "-" if x is None else ("%.*f" % (nd, x))


def main():
    args = sys.argv[1:]
    plot_to = None
    if "--plot" in args:
        i = args.index("--plot")
        plot_to = args[i + 1]
        del args[i:i + 2]
    readme = None
    if "--readme" in args:
        i = args.index("--readme")
        readme = args[i + 1]
        del args[i:i + 2]
    d = args[0]
    ours, peers = load_ours(d), load_peers(d)
    if plot_to:
        plot(d, ours, peers, plot_to)
    if readme:
        splice_readme(readme, d, ours, peers, plot_to)
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
            for b in batches:
                cells, windows = [], []
                for t in threads:
                    p = ours.get((m, c, b, t))
                    cells.append("-" if p is None else "%s / %s" % (fmt(p["qps"]), fmt(p["p99_ms"], 2)))
                    windows += p["windows"] if p else []
                u, mem, own = smi(d, m, c, windows)
                star = "" if own else "*"
                print("| %s | %d | %s | %s%s | %s%s |" % (c, b, " | ".join(cells), fmt(u), star, fmt(mem), star))
        print()
    if not any(k[1] == "g1" for k in ours):
        # A run without g1 (bench_all.sh's POOL_ONLY=1): only the pool's table.
        pool_table(d, ours, models, pooled)
        return
    headline(d, ours, peers, configs, one_gpu)
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


def headline(d, ours, peers, configs, one_gpu):
    """The table of best QPS at p99 <= P99_MS, a column per configuration."""
    models = sorted({k[0] for k in ours})
    graphs = graphs_default(configs)
    print("## Best QPS with p99 <= %g ms, per (model, batch) and configuration\n" % P99_MS)
    print("Each cell: QPS (T) / mean GPU utilisation %% / peak device memory MiB during that point (* = over "
          "the configuration's whole run; QPS (T) alone where the run kept no nvidia-smi samples). Graphs on: %s. Default / peer is our best default configuration "
          "(stream groups and CUDA graphs, nothing else set) over the best peer; graphs off / peer is our best "
          "configuration without graphs over it.\n" % (", ".join(c for c in one_gpu if graphs[c]) or "none"))
    print("| model | B | " + " | ".join(one_gpu) + " | best peer (mode, T) | default / peer | graphs off / peer |")
    print("|---|---|" + "---|" * len(one_gpu) + "---|---|---|")
    for m in models:
        for b in sorted({k[2] for k in ours if k[0] == m}):
            def pts(c):
                return [(k[3], v) for k, v in ours.items() if k[0] == m and k[1] == c and k[2] == b]
            cells, dflt, off = [], None, None
            for c in one_gpu:
                r = best(pts(c))
                if r is None:
                    cells.append("-")
                    continue
                u, mem, own = smi(d, m, c, ours[(m, c, b, r[1])]["windows"])
                if u is None and mem is None:
                    cells.append("%s (%d)" % (fmt(r[0]), r[1]))  # no nvidia-smi samples kept
                else:
                    cells.append("%s (%d) / %s / %s%s" % (fmt(r[0]), r[1], fmt(u), fmt(mem), "" if own else "*"))
                if is_default(c, graphs):
                    dflt = max(dflt or 0, r[0])
                if not graphs[c]:
                    off = max(off or 0, r[0])
            peer = best_peer(peers, m, b)
            print("| %s | %d | %s | %s | %s | %s |" % (
                m, b, " | ".join(cells),
                "%s (%s, %d)" % (fmt(peer[0]), peer[1], peer[2]) if peer else "-",
                fmt(dflt / peer[0], 2) if peer and dflt else "-",
                fmt(off / peer[0], 2) if peer and off else "-"))
    print()


def best_peer(peers, m, b):
    """The peer's best (qps, mode, threads) at p99 <= P99_MS, or None."""
    peer = None
    for (pm, mode, pb, pt), r in peers.items():
        if pm == m and pb == b and r.get("p99_ms") is not None and r["p99_ms"] <= P99_MS:
            if peer is None or r["qps"] > peer[0]:
                peer = (r["qps"], mode, pt)
    return peer


def plot(d, ours, peers, path):
    """QPS against p99 for PLOT_MODEL at PLOT_BATCH: a line per
    configuration over T, a dashed one per peer mode."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        print("report.py: no plot (%s); bench/gpu/report.sh installs matplotlib" % e, file=sys.stderr)
        return False
    m = os.environ.get("PLOT_MODEL", "dlrm_small")
    b = int(os.environ.get("PLOT_BATCH", "16"))
    fig, ax = plt.subplots(figsize=(8, 5.5))
    ax.set_prop_cycle(color=[plt.cm.tab20(i) for i in range(20)])
    configs = sorted({k[1] for k in ours if k[0] == m and k[2] == b and not k[1].endswith("p")},
                     key=lambda c: (int(re.match(r"g(\d+)", c).group(1)), c))
    for c in configs:
        pts = sorted((t, v) for (pm, pc, pb, t), v in ours.items() if (pm, pc, pb) == (m, c, b))
        ax.plot([v["p99_ms"] for _, v in pts], [v["qps"] for _, v in pts], marker="o", label="mstream " + c)
        for t, v in pts:
            ax.annotate("T=%d" % t, (v["p99_ms"], v["qps"]), fontsize=6, alpha=0.6)
    for mode in sorted({k[1] for k in peers if k[0] == m and k[2] == b}):
        pts = sorted((t, r) for (pm, pmode, pb, t), r in peers.items() if (pm, pmode, pb) == (m, mode, b))
        ax.plot([r["p99_ms"] for _, r in pts], [r["qps"] for _, r in pts], marker="s", linestyle="--",
                label="PyTorch " + mode)
    ax.axvline(P99_MS, color="grey", linewidth=0.8, linestyle=":")
    ax.set_xscale("log")
    ax.set_xlabel("p99 latency (ms, log scale); dotted: the %g ms bound" % P99_MS)
    ax.set_ylabel("QPS (requests/s)")
    env = os.path.join(d, "env.txt")
    gpu = open(env).read().splitlines()[1].split(",")[0] if os.path.exists(env) and len(open(env).read().splitlines()) > 1 else "GPU"
    ax.set_title("%s, B=%d, on %s: one point per client thread count T" % (m, b, gpu))
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    return True


README_BEGIN = "<!-- bench/gpu/report.sh: table begins -->"
README_END = "<!-- bench/gpu/report.sh: table ends -->"


def splice_readme(readme, d, ours, peers, plot_to):
    """Replaces the README's text between README_BEGIN and README_END with
    the headline table (and the plot, when one was drawn), linking both to
    their folder relative to the README."""
    import contextlib
    import io
    configs = sorted({k[1] for k in ours}, key=lambda c: (int(re.match(r"g(\d+)", c).group(1)), c))
    one_gpu = [c for c in configs if not c.endswith("p")]
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        headline(d, ours, peers, configs, one_gpu)
    table = buf.getvalue().split("\n", 2)[2].strip()  # without the section title
    base = os.path.dirname(os.path.abspath(readme))
    rel = os.path.relpath(os.path.abspath(d), base)
    block = ["From `%s` (`bash bench/gpu/report.sh %s` regenerates this table and the plot):" % (rel, rel), "", table]
    if plot_to and os.path.exists(plot_to):
        pr = os.path.relpath(os.path.abspath(plot_to), base)
        block += ["", "![QPS against p99 latency, DLRM-small at B=16, ours and PyTorch's](%s)" % pr]
    text = open(readme).read()
    if README_BEGIN not in text or README_END not in text:
        sys.exit("report.py: %s has no %s ... %s block" % (readme, README_BEGIN, README_END))
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    open(readme, "w").write(head + README_BEGIN + "\n" + "\n".join(block) + "\n" + README_END + tail)


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
