#!/usr/bin/env python3
"""NumPy peer of BenchmarkOps: the same ops, shapes and value ranges, timed
the same way (bytes read plus bytes written per call, median of runs).
Prints one line per case: name<TAB>GB/s. NumPy runs these single-threaded."""
import sys
import time

import numpy as np

N = 1 << 20
rng = np.random.default_rng(1)


def f32(lo, hi, *shape):
    return rng.uniform(lo, hi, shape).astype(np.float32)


def softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# name, function, inputs; names match ops_test.go.
CASES = [
    ("AddV2 [1M]+[1M]", lambda a, b: a + b, (f32(-3, 3, N), f32(-3, 3, N))),
    ("Mul [1M]*scalar", lambda a, b: a * b, (f32(-3, 3, N), np.float32(1.5))),
    ("Maximum [1M],[1M]", np.maximum, (f32(-3, 3, N), f32(-3, 3, N))),
    ("BiasAdd [4096,256]+[256]", lambda a, b: a + b, (f32(-3, 3, 4096, 256), f32(-3, 3, 256))),
    ("AddV2 [1024,1024]+[1024,1]", lambda a, b: a + b, (f32(-3, 3, 1024, 1024), f32(-3, 3, 1024, 1))),
    ("Relu [1M]", lambda x: np.maximum(x, np.float32(0)), (f32(-3, 3, N),)),
    ("Sigmoid [1M]", lambda x: np.float32(1) / (np.float32(1) + np.exp(-x)), (f32(-8, 8, N),)),
    ("Tanh [1M]", np.tanh, (f32(-8, 8, N),)),
    ("Exp [1M]", np.exp, (f32(-8, 8, N),)),
    ("Log [1M]", np.log, (f32(0.01, 100, N),)),
    ("Sqrt [1M]", np.sqrt, (f32(0, 100, N),)),
    ("Sum all [1M]", lambda x: x.sum(), (f32(-3, 3, N),)),
    ("Sum axis -1 [1024,1024]", lambda x: x.sum(axis=-1), (f32(-3, 3, 1024, 1024),)),
    ("Sum axis 0 [1024,1024]", lambda x: x.sum(axis=0), (f32(-3, 3, 1024, 1024),)),
    ("Mean axes 1,2 [16,32,32,64]", lambda x: x.mean(axis=(1, 2)), (f32(-3, 3, 16, 32, 32, 64),)),
    ("Max axis -1 [1024,1024]", lambda x: x.max(axis=-1), (f32(-3, 3, 1024, 1024),)),
    ("ArgMax axis -1 [1024,1000]", lambda x: x.argmax(axis=-1), (f32(-3, 3, 1024, 1000),)),
    ("Softmax [4096,256]", softmax, (f32(-8, 8, 4096, 256),)),
]


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    for name, fn, args in CASES:
        out = np.asarray(fn(*args))
        nbytes = sum(np.asarray(a).nbytes for a in args) + out.nbytes
        times = []
        for _ in range(runs):
            t0 = time.perf_counter()
            fn(*args)
            times.append(time.perf_counter() - t0)
        times.sort()
        print("%s\t%.2f" % (name, nbytes / times[len(times) // 2] / 1e9))


if __name__ == "__main__":
    main()
