#!/usr/bin/env python3
"""NumPy peer of BenchmarkConv2D: the same layers, convolved as im2col
(sliding_window_view, one copy) + matmul, which NumPy hands to its BLAS
(OpenBLAS here, threaded over every CPU). Depthwise is a sum of k*k shifted
multiplies. Prints name<TAB>GFLOP/s (median of runs), names as conv_test.go."""
import sys
import time

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

LAYERS = [
    # name, n, h, w, c, k, o, stride, padding, depthwise
    ("resnet 3x3 56x56x64->64 b1", 1, 56, 56, 64, 3, 64, 1, "SAME", False),
    ("resnet 3x3 56x56x64->64 b8", 8, 56, 56, 64, 3, 64, 1, "SAME", False),
    ("resnet 1x1 56x56x256->64 b1", 1, 56, 56, 256, 1, 64, 1, "VALID", False),
    ("resnet 3x3 14x14x256->256 b1", 1, 14, 14, 256, 3, 256, 1, "SAME", False),
    ("stem 7x7/2 224x224x3->64 b1", 1, 224, 224, 3, 7, 64, 2, "SAME", False),
    ("mobilenet dw 3x3 112x112x32 b1", 1, 112, 112, 32, 3, 1, 1, "SAME", True),
]


def out_size(h, k, s, padding):
    if padding == "VALID":
        return (h - k) // s + 1, 0
    o = (h + s - 1) // s
    return o, max(0, (o - 1) * s + k - h)


def conv(x, f, k, s, padding, depthwise):
    n, h, w, c = x.shape
    oh, ph = out_size(h, k, s, padding)
    ow, pw = out_size(w, k, s, padding)
    if ph or pw:
        x = np.pad(x, ((0, 0), (ph // 2, ph - ph // 2), (pw // 2, pw - pw // 2), (0, 0)))
    if depthwise:
        out = np.zeros((n, oh, ow, c), np.float32)
        for a in range(k):
            for b in range(k):
                out += x[:, a:a + (oh - 1) * s + 1:s, b:b + (ow - 1) * s + 1:s, :] * f[a, b, :, 0]
        return out
    win = sliding_window_view(x, (k, k), axis=(1, 2))[:, ::s, ::s][:, :oh, :ow]  # n,oh,ow,c,k,k
    cols = np.ascontiguousarray(win.transpose(0, 1, 2, 4, 5, 3)).reshape(n * oh * ow, k * k * c)
    return (cols @ f.reshape(k * k * c, -1)).reshape(n, oh, ow, -1)


def main():
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    rng = np.random.default_rng(1)
    for name, n, h, w, c, k, o, s, padding, dw in LAYERS:
        x = rng.uniform(-1, 1, (n, h, w, c)).astype(np.float32)
        f = rng.uniform(-1, 1, (k, k, c, o)).astype(np.float32)
        oh, _ = out_size(h, k, s, padding)
        ow, _ = out_size(w, k, s, padding)
        oc, cin = (c * o, 1) if dw else (o, c)
        flops = 2.0 * n * oh * ow * oc * k * k * cin
        conv(x, f, k, s, padding, dw)
        times = []
        for _ in range(runs):
            t = time.perf_counter()
            conv(x, f, k, s, padding, dw)
            times.append(time.perf_counter() - t)
        print("%s\t%.2f" % (name, flops / sorted(times)[len(times) // 2] / 1e9))


if __name__ == "__main__":
    main()
