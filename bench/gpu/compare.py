"""Compares two runs of bench_all.sh point by point: for each (model,
config), the geometric mean over batches and thread counts of new QPS /
old QPS (best repeat of each point), and the smallest and largest ratio.

  python3 bench/gpu/compare.py OLD/ours.jsonl[.gz] NEW/ours.jsonl[.gz]

Only points both runs reached count (run.sh stops at its time limit).
"""
import collections
import gzip
import json
import math
import sys


def load(path):
    opener = gzip.open if path.endswith(".gz") else open
    best = {}
    with opener(path, "rt") as f:
        for line in f:
            r = json.loads(line)
            if r.get("qps") is None:
                continue
            k = (r["model"], r["config"], r["batch"], r["threads"])
            best[k] = max(best.get(k, 0), r["qps"])
    return best


def main():
    old, new = load(sys.argv[1]), load(sys.argv[2])
    ratios = collections.defaultdict(list)
    for k in old.keys() & new.keys():
        ratios[k[:2]].append(new[k] / old[k])
    print("| model | config | points | new / old (geomean) | min | max |")
    print("|---|---|---:|---:|---:|---:|")
    for (model, config), rs in sorted(ratios.items()):
        g = math.exp(sum(map(math.log, rs)) / len(rs))
        print(f"| {model} | {config} | {len(rs)} | {g:.2f} | {min(rs):.2f} | {max(rs):.2f} |")


if __name__ == "__main__":
    main()
