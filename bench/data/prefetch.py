"""A training-style loop fed by tf.data, with and without Prefetch.

Usage (from the repo root; bench/data/run.sh runs all three):
  build/venv/bin/python bench/data/prefetch.py gen DIR     # TF writes DIR/{plain,prefetch}.pb
  build/venv/bin/python bench/data/prefetch.py mstream DIR [STEPS]  # through libmstream.so
  build/venv/bin/python bench/data/prefetch.py tf DIR [STEPS]  # the peer: TF 2.15 itself

The pipeline is range -> map(slow) -> batch(4) [-> prefetch(2)] -> one-shot
iterator: the map function is a chain of MAP_DEPTH 128x128 matmuls and
tanh per element (the cost of decoding and augmenting an example). The step
is a model's forward pass on the batch: STEP_DEPTH matmuls of the [512,128]
batch by a 128x128 weight, reduced to a scalar that is fetched. Without
prefetch, the step waits for its batch every time; with it, the next batch
is made on another thread while the step runs. Prints the median and mean
time per step over STEPS steps after 5 warm-up steps.
"""
import os
import statistics
import sys
import time

import numpy as np

MAP_DEPTH = 48
STEP_DEPTH = 16


def gen(out):
    import tensorflow as tf
    tf.compat.v1.disable_eager_execution()
    rng = np.random.default_rng(0)
    w_map = rng.standard_normal((128, 128)).astype(np.float32) / 12
    w_step = rng.standard_normal((128, 128)).astype(np.float32) / 12

    def slow(x):
        v = tf.fill([128, 128], tf.cast(x, tf.float32) / 1000.0)
        for _ in range(MAP_DEPTH):
            v = tf.tanh(tf.matmul(v, tf.constant(w_map)))
        return v

    for name, pre in (("plain", False), ("prefetch", True)):
        g = tf.Graph()
        with g.as_default():
            ds = tf.data.Dataset.range(1 << 40).map(slow).batch(4)
            if pre:
                ds = ds.prefetch(2)
            x = tf.compat.v1.data.make_one_shot_iterator(ds).get_next()
            h = tf.reshape(x, [512, 128])
            for _ in range(STEP_DEPTH):
                h = tf.tanh(tf.matmul(h, tf.constant(w_step)))
            tf.identity(tf.reduce_sum(h), name="loss")
        with open(os.path.join(out, name + ".pb"), "wb") as f:
            f.write(g.as_graph_def().SerializeToString())


def timed(run, steps):
    for _ in range(5):
        run()
    ts = []
    for _ in range(steps):
        t0 = time.perf_counter()
        run()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3, statistics.mean(ts) * 1e3


def main():
    mode, d = sys.argv[1], sys.argv[2]
    steps = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    if mode == "gen":
        gen(d)
        return
    for name in ("plain", "prefetch"):
        with open(os.path.join(d, name + ".pb"), "rb") as f:
            gd = f.read()
        if mode == "mstream":
            sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
            import mstream
            g = mstream.Graph.from_bytes(gd)
            s = mstream.Session(g)
            med, mean = timed(lambda: s.run(["loss:0"]), steps)
        else:
            import tensorflow as tf
            tf.compat.v1.disable_eager_execution()
            g = tf.Graph()
            with g.as_default():
                gdef = tf.compat.v1.GraphDef.FromString(gd)
                tf.import_graph_def(gdef, name="")
            s = tf.compat.v1.Session(graph=g)
            loss = g.get_tensor_by_name("loss:0")
            med, mean = timed(lambda: s.run(loss), steps)
        print("%-8s %-9s %8.2f ms/step median %8.2f mean" % (mode, name, med, mean), flush=True)


if __name__ == "__main__":
    main()
