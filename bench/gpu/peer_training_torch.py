"""The PyTorch peer of the training benchmark (bench/gpu/training.sh): the
training example's model (examples/multistream_training/gen.py) trained the
same way on one GPU, for steps/s beside ours.

Model: TOWERS towers, each an nn.Embedding (rows VOCAB[t], 32 wide, sparse
gradients) and an MLP 32 -> 256 -> 128 -> 32 with ReLU, concatenated into a
head 128 -> 64 -> 1; BCEWithLogits loss (TF's sigmoid cross-entropy, mean);
Adagrad with lr 0.1 and initial accumulator 0.1 (TF's AdagradOptimizer).
A step copies a batch of host (pinned) ids and labels to the GPU, runs
forward, backward and the optimizer step, and every EVERY steps reads the loss
back, as the C example fetches it; the clock stops after a final synchronize.

Modes:
  one_stream         everything on the default stream
  stream_per_tower   tower t's forward, backward (autograd runs a backward op
                     on its forward op's stream) and optimizer step on its own
                     torch.cuda.Stream; the head on the default stream, with
                     events between them
Prints one JSON line per mode and writes them to $OUT/peer_training_torch.json:

  STEPS=100 BATCH=256 EVERY=10 OUT=/tmp/o python3 peer_training_torch.py

Needs PyTorch with CUDA.
"""
import json
import os
import time

import torch
import torch.nn as nn

torch.backends.cuda.matmul.allow_tf32 = True  # TF's default for fp32 GEMMs
DEV = "cuda"
VOCAB = [1000, 5000, 2000, 500]
EMB = 32
TOWER = [256, 128, 32]
HEAD = [64]
STEPS = int(os.environ.get("STEPS", "100"))
BATCH = int(os.environ.get("BATCH", "256"))
EVERY = int(os.environ.get("EVERY", "10"))
MODES = os.environ.get("MODES", "one_stream,stream_per_tower").split(",")


def mlp(sizes, last_relu):
    layers = []
    for i in range(len(sizes) - 1):
        layers.append(nn.Linear(sizes[i], sizes[i + 1]))
        if i < len(sizes) - 2 or last_relu:
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class Tower(nn.Module):
    def __init__(self, rows):
        super().__init__()
        self.emb = nn.Embedding(rows, EMB, sparse=True)
        nn.init.uniform_(self.emb.weight, -1.0, 1.0)
        self.mlp = mlp([EMB] + TOWER, True)

    def forward(self, ids):
        return self.mlp(self.emb(ids))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.towers = nn.ModuleList(Tower(v) for v in VOCAB)
        self.head = mlp([len(VOCAB) * TOWER[-1]] + HEAD + [1], False)


def adagrad(params):
    return torch.optim.Adagrad(params, lr=0.1, initial_accumulator_value=0.1, eps=1e-7)


def batches(n):
    """n host batches (pinned): ids per tower, skewed as the C example's, and labels."""
    g = torch.Generator().manual_seed(20240501)
    out = []
    for _ in range(n):
        ids = [(torch.rand(BATCH, generator=g) ** 2 * v).long().pin_memory() for v in VOCAB]
        label = (torch.rand(BATCH, 1, generator=g) > 0.5).float().pin_memory()
        out.append((ids, label))
    return out


def run(mode):
    torch.manual_seed(1)
    model = Model().to(DEV)
    loss_fn = nn.BCEWithLogitsLoss()
    # Sparse embedding gradients and dense weights need separate Adagrads
    # (torch's Adagrad takes either); one pair per tower, one for the head.
    opts = [(adagrad([t.emb.weight]), adagrad(list(t.mlp.parameters()))) for t in model.towers]
    head_opt = adagrad(list(model.head.parameters()))
    streams = [torch.cuda.Stream() for _ in VOCAB] if mode == "stream_per_tower" else None
    data = batches(8)
    losses = []

    def step(k):
        ids, label = data[k % len(data)]
        main = torch.cuda.current_stream()
        label = label.to(DEV, non_blocking=True)
        outs = []
        if streams is None:
            outs = [t(i.to(DEV, non_blocking=True)) for t, i in zip(model.towers, ids)]
        else:
            for t, i, s in zip(model.towers, ids, streams):
                s.wait_stream(main)
                with torch.cuda.stream(s):
                    outs.append(t(i.to(DEV, non_blocking=True)))
            for s in streams:
                main.wait_stream(s)
        loss = loss_fn(model.head(torch.cat(outs, 1)), label)
        for o in opts:
            o[0].zero_grad(set_to_none=True)
            o[1].zero_grad(set_to_none=True)
        head_opt.zero_grad(set_to_none=True)
        loss.backward()
        head_opt.step()
        if streams is None:
            for o in opts:
                o[0].step()
                o[1].step()
        else:
            for o, s in zip(opts, streams):
                s.wait_stream(main)
                with torch.cuda.stream(s):
                    o[0].step()
                    o[1].step()
            for s in streams:
                main.wait_stream(s)
        if k % EVERY == 0 or k == STEPS - 1:
            losses.append((k, loss.item()))

    step(0)  # warm-up, as the C example leaves its first step out of the clock
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for k in range(1, STEPS):
        step(k)
    torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    return {"peer": "torch", "mode": mode, "steps": STEPS - 1, "batch": BATCH,
            "steps_per_s": (STEPS - 1) / wall, "examples_per_s": (STEPS - 1) * BATCH / wall,
            "last_loss": losses[-1][1], "torch": torch.__version__,
            "gpu": torch.cuda.get_device_name(0)}


def main():
    results = []
    for mode in MODES:
        r = run(mode)
        print(json.dumps(r), flush=True)
        results.append(r)
    out = os.environ.get("OUT")
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "peer_training_torch.json"), "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
