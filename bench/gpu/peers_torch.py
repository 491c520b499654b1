"""The PyTorch peer of the GPU benchmark (bench/gpu): the same models as
bench/gpu/gen writes for us, served the same way, on one GPU.

Closed-loop clients: each of T threads sends requests back to back. A request
copies host (pinned) inputs to the GPU, runs the model, copies the output back,
and waits on an event -- the shape of a TF Session.Run with host feeds/fetches.

Modes:
  eager_shared      all threads enqueue on the default stream (stock-TF-like: one compute stream)
  eager_per_stream  each thread on its own torch.cuda.Stream (PyTorch "stream per thread")
  graph_shared      each thread replays its own CUDA graph, all on the default stream
  graph_per_stream  each thread replays its own CUDA graph on its own stream
Prints one JSON line per config; writes all to $OUT/peers_torch.json, which
bench/gpu/report.py reads. bench/gpu/package.sh copies this script beside
bench_all.sh, which runs it before our load generator:

  BATCHES=1,16,64,256 THREADS=1,4,8,16 DUR=0.2 OUT=/tmp/o python3 peers_torch.py

Needs PyTorch with CUDA (and pynvml for the utilisation column, optional).
"""
import json
import os
import sys
import threading
import time

import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = True  # TF enables TF32 by default for fp32 matmul
torch.backends.cudnn.allow_tf32 = True
DEV = "cuda"
DUR = float(os.environ.get("DUR", "1.0"))
BATCHES = [int(x) for x in os.environ.get("BATCHES", "1,16,64,256").split(",")]
THREADS = [int(x) for x in os.environ.get("THREADS", "1,4,8,16").split(",")]
MODES = os.environ.get("MODES", "eager_shared,eager_per_stream,graph_shared,graph_per_stream").split(",")

try:
    import pynvml

    pynvml.nvmlInit()
    NVH = pynvml.nvmlDeviceGetHandleByIndex(0)
except Exception as e:  # noqa
    print("nvml unavailable:", e, file=sys.stderr)
    NVH = None


def mlp(sizes, last_act=True):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2 or last_act:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class MLPModel(nn.Module):
    """Plain MLP 512-1024-1024-512-256-1 (~2.0M params)."""

    def __init__(self):
        super().__init__()
        self.net = mlp([512, 1024, 1024, 512, 256, 1], last_act=False)

    def forward(self, dense, sparse):
        return torch.sigmoid(self.net(dense))


class DLRMSmall(nn.Module):
    """DLRM-like: 13 dense -> bottom 512-256-64; 26 tables x 100k x 64 (one id each,
    one gather per table, as a TF GraphDef would have); dot interaction; top 415-512-256-1."""

    def __init__(self, tables=26, rows=100_000, dim=64):
        super().__init__()
        self.emb = nn.ModuleList([nn.Embedding(rows, dim) for _ in range(tables)])
        self.bot = mlp([13, 512, 256, dim])
        n = tables + 1
        li, lj = torch.tril_indices(n, n, offset=-1)
        self.register_buffer("li", li)
        self.register_buffer("lj", lj)
        self.top = mlp([dim + n * (n - 1) // 2, 512, 256, 1], last_act=False)

    def forward(self, dense, sparse):
        x = self.bot(dense)
        feats = [x] + [e(sparse[:, i]) for i, e in enumerate(self.emb)]
        t = torch.stack(feats, dim=1)
        z = torch.bmm(t, t.transpose(1, 2))
        zf = z[:, self.li, self.lj]
        return torch.sigmoid(self.top(torch.cat([x, zf], dim=1)))


MODELS = {
    "mlp": (MLPModel, 512, 0),
    "dlrm_small": (DLRMSmall, 13, 26),
}


def count_kernels(model, dense, sparse):
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        model(dense, sparse)
        torch.cuda.synchronize()
    return sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)


class Client:
    def __init__(self, model, B, nd, ns, graph):
        self.B = B
        self.dense_h = torch.randn(B, nd).pin_memory()
        self.sparse_h = torch.randint(0, 100_000, (B, max(ns, 1))).pin_memory()
        self.out_h = torch.empty(B, 1).pin_memory()
        self.ev = torch.cuda.Event()
        self.own = torch.cuda.Stream()
        self.graph = None
        if graph:
            self.sd = torch.empty(B, nd, device=DEV)
            self.ss = torch.zeros(B, max(ns, 1), dtype=torch.long, device=DEV)
            with torch.cuda.stream(self.own):
                self.sd.copy_(self.dense_h)
                self.ss.copy_(self.sparse_h)
                for _ in range(3):
                    model(self.sd, self.ss)
            self.own.synchronize()
            self.graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self.graph, stream=self.own):
                self.sy = model(self.sd, self.ss)
            torch.cuda.synchronize()

    def request(self, model, stream):
        with torch.cuda.stream(stream):
            if self.graph is not None:
                self.sd.copy_(self.dense_h, non_blocking=True)
                self.ss.copy_(self.sparse_h, non_blocking=True)
                self.graph.replay()
                self.out_h.copy_(self.sy, non_blocking=True)
            else:
                d = self.dense_h.to(DEV, non_blocking=True)
                s = self.sparse_h.to(DEV, non_blocking=True)
                y = model(d, s)
                self.out_h.copy_(y, non_blocking=True)
            self.ev.record(stream)
        self.ev.synchronize()


def run_config(model, clients, mode, T):
    shared = mode.endswith("_shared")
    lats = [[] for _ in range(T)]
    barrier = threading.Barrier(T + 1)
    box = {}

    def worker(i):
        c = clients[i]
        with torch.inference_mode():
            stream = torch.cuda.default_stream() if shared else c.own
            for _ in range(10):
                c.request(model, stream)
            barrier.wait()
            stop = box["stop"]
            lat = lats[i]
            while time.perf_counter() < stop:
                t = time.perf_counter()
                c.request(model, stream)
                lat.append(time.perf_counter() - t)

    ths = [threading.Thread(target=worker, args=(i,)) for i in range(T)]
    for t in ths:
        t.start()
    util = []
    box["stop"] = time.perf_counter() + DUR + 0.05  # set before release
    barrier.wait()
    start = time.perf_counter()
    box["stop"] = start + DUR
    while time.perf_counter() < start + DUR:
        if NVH is not None:
            try:
                util.append(pynvml.nvmlDeviceGetUtilizationRates(NVH).gpu)
            except Exception:
                pass
        time.sleep(0.02)
    for t in ths:
        t.join()
    wall = time.perf_counter() - start
    allv = sorted(x for l in lats for x in l)
    n = len(allv)
    return {
        "qps": n / wall,
        "samples_per_s": n * clients[0].B / wall,
        "p50_ms": allv[n // 2] * 1e3 if n else None,
        "p99_ms": allv[int(0.99 * (n - 1))] * 1e3 if n else None,
        "nvml_util_pct": sum(util) / len(util) if util else None,
        "requests": n,
    }


def main():
    out = os.environ.get("OUT", ".")
    results = []
    print(json.dumps({"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}), flush=True)
    maxT = max(THREADS)
    for mname, (cls, nd, ns) in MODELS.items():
        torch.manual_seed(0)
        model = cls().to(DEV).eval()
        with torch.inference_mode():
            params = sum(p.numel() for p in model.parameters())
            d = torch.randn(16, nd, device=DEV)
            s = torch.randint(0, 100_000, (16, max(ns, 1)), device=DEV)
            try:
                nk = count_kernels(model, d, s)
            except Exception as e:  # noqa
                nk = "n/a: %s" % e
            print(json.dumps({"model": mname, "params": params, "cuda_kernels_per_forward": nk}), flush=True)
            for B in BATCHES:
                need_graph = any(m.startswith("graph") for m in MODES)
                eager_clients = [Client(model, B, nd, ns, False) for _ in range(maxT)]
                graph_clients = [Client(model, B, nd, ns, True) for _ in range(maxT)] if need_graph else None
                for mode in MODES:
                    clients = graph_clients if mode.startswith("graph") else eager_clients
                    for T in THREADS:
                        r = run_config(model, clients, mode, T)
                        r.update({"model": mname, "batch": B, "mode": mode, "threads": T})
                        results.append(r)
                        print(json.dumps(r), flush=True)
                del eager_clients, graph_clients
                torch.cuda.synchronize()
        del model
        torch.cuda.empty_cache()
    with open(os.path.join(out, "peers_torch.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
