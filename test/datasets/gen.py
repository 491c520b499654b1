"""Writes tf.data pipeline graphs built by TF 2.15 in graph mode and the
elements TF's own session yields from them.

Usage: build/venv/bin/python test/datasets/gen.py [OUT_DIR]  (from the repo root;
OUT_DIR defaults to this directory)

Each case is a tf.compat.v1 graph with a one-shot or an initializable
iterator over a pipeline (range, from_tensors, from_tensor_slices, map with
a function of the library, filter, batch, padded_batch, shuffle with a
seed, repeat, take, skip, zip, concatenate, prefetch, parallel map,
TextLineDataset and TFRecordDataset over files TF writes here). For each
case TF runs: the initializer (with its feeds) when there is one, then
get_next until OUT_OF_RANGE (an element's error is recorded and the
iterator read on, as a training loop that skips bad elements does; three
errors in a row end the pass), twice for an initializable iterator (the
second pass after initializing again). Every element, and the final error's
code and message, go into cases.json with the GraphDef (<case>.pbtxt).
dataset/dataset_test.go runs the same graphs through mstream and compares,
in order. File names are fed at run time as paths relative to OUT_DIR, so the
Go test can pass its own.
"""
import json
import os
import sys

import numpy as np
import tensorflow as tf

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.abspath(sys.argv[1]) if len(sys.argv) > 1 else here
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng()
D = tf.data.Dataset


def enc(v):
    # Bytes go through an object array: numpy's fixed-width "S" dtype
    # drops trailing NUL bytes, so a TFRecord ending in 0x00 would be
    # recorded without it (1 CI run in a few failed on that).
    if isinstance(v, bytes):
        v = np.array([v], dtype=object).reshape(())
    v = np.asarray(v)
    if v.dtype.kind in "SO":
        return {"dtype": "string", "shape": list(v.shape),
                "values": [bytes(x).hex() for x in v.ravel()]}
    vals = v.ravel()
    if v.dtype == np.bool_:
        vals = vals.astype(np.int64)
    return {"dtype": str(v.dtype), "shape": list(v.shape), "values": vals.tolist()}


cases = []


def case(name, build, feeds=None, consume=None):
    """build() makes the pipeline in a fresh graph and returns (iterator,
    initializable); feeds maps placeholder names to values for the
    initializer (a file name is a path relative to out); consume, given
    get_next's outputs, adds a computation on them whose outputs are fetched
    with them (in a GPU session, GPU kernels reading the host pipeline)."""
    g = tf.Graph()
    with g.as_default():
        it, init = build()
        nxt = it.get_next()
        nxt = list(nxt) if isinstance(nxt, (tuple, list)) else [nxt]
        if consume:
            nxt += consume(*nxt)
    gd = g.as_graph_def()
    with open(os.path.join(out, name + ".pbtxt"), "w") as f:
        f.write(str(gd))
    passes = []
    cwd = os.getcwd()
    os.chdir(out)
    try:
        with tf.compat.v1.Session(graph=g) as s:
            for _ in range(2 if init else 1):
                if init:
                    s.run(it.initializer, {g.get_tensor_by_name(k + ":0"): v for k, v in (feeds or {}).items()})
                elems, errors = [], 0
                while True:
                    try:
                        elems.append([enc(x) for x in s.run(nxt)])
                        errors = 0
                    except tf.errors.OpError as e:
                        msg = [l for l in e.message.strip().split("\n") if not l.startswith("\t [[")]
                        end = {"code": e.error_code, "message": msg[-1]}
                        errors += 1
                        if e.error_code == tf.errors.OUT_OF_RANGE or errors == 3:
                            break
                        # An element's error: the iterator goes on.
                        elems.append({"error": end})
                passes.append({"elements": elems, "end": end})
    finally:
        os.chdir(cwd)
    cases.append({
        "name": name,
        "init": it.initializer.name if init else "",
        "feeds": {k: enc(v) for k, v in (feeds or {}).items()},
        "next": [t.name for t in nxt],
        "shapes": [t.shape.as_list() if t.shape.rank is not None else None for t in nxt],
        "passes": passes,
    })


def one_shot(ds):
    return lambda: (tf.compat.v1.data.make_one_shot_iterator(ds()), False)


def initializable(ds):
    return lambda: (tf.compat.v1.data.make_initializable_iterator(ds()), True)


n = int(rng.integers(7, 15))
k = int(rng.integers(1, 100))
case("range_map_batch", one_shot(lambda: D.range(n).map(lambda x: x * 2 + k).batch(3)))
case("range_batch_drop", one_shot(lambda: D.range(n).batch(4, drop_remainder=True)))
mat = rng.standard_normal((n, 3)).astype(np.float32)
lab = rng.integers(-5, 5, n).astype(np.int32)
case("slices_filter", initializable(lambda: D.from_tensor_slices(
    (tf.compat.v1.placeholder(tf.float32, [None, 3], name="x"), tf.compat.v1.placeholder(tf.int32, [None], name="y")))
    .filter(lambda a, b: b > 0)), feeds={"x": mat, "y": lab})
seed = int(rng.integers(1, 1 << 30))
case("shuffle_repeat", one_shot(lambda: D.range(n * 2).shuffle(5, seed=seed).repeat(3).batch(4)))
case("shuffle_fixed", one_shot(lambda: D.range(n * 2).shuffle(7, seed=seed, reshuffle_each_iteration=False).repeat(2)))
case("shuffle_graph_seed", lambda: (tf.compat.v1.set_random_seed(seed) or
                                    tf.compat.v1.data.make_one_shot_iterator(D.range(n).shuffle(100)), False))
case("padded_batch", one_shot(lambda: D.range(1, n).map(lambda x: tf.fill([x % 4 + 1], x)).padded_batch(3, padded_shapes=[None])))
case("padded_fixed", one_shot(lambda: D.range(1, 6).map(lambda x: (tf.fill([x, 2], tf.cast(x, tf.float32)), x))
                              .padded_batch(2, padded_shapes=([6, 2], []), padding_values=(-1.0, tf.constant(7, tf.int64)))))
case("zip_skip_take_concat", one_shot(lambda: D.zip((D.range(n), D.range(100, 100 + n).map(lambda x: tf.cast(x, tf.float64))))
                                      .skip(2).take(4).concatenate(D.zip((D.range(3), D.range(3).map(lambda x: tf.cast(x, tf.float64)))))))
vec = rng.standard_normal(4).astype(np.float32)
case("from_tensors_repeat_capture", one_shot(lambda: D.from_tensors(tf.constant(vec)).repeat(3)
                                             .map(lambda v: v * tf.constant(vec) + 1.0)))
w = rng.standard_normal((4, 3)).astype(np.float32)
case("batch_matmul_step", one_shot(lambda: D.range(n * 4).map(lambda x: tf.fill([4], tf.cast(x, tf.float32) / 8)).batch(5).prefetch(1)),
     consume=lambda x: [tf.nn.relu(tf.matmul(x, tf.constant(w)))])
case("parallel_map_prefetch", one_shot(lambda: D.range(n * 3).map(lambda x: tf.square(x) - k, num_parallel_calls=4).prefetch(2)))
case("map_cond_while", one_shot(lambda: D.range(n).map(
    lambda x: tf.while_loop(lambda i, a: i < x, lambda i, a: (i + 1, a + i), (tf.constant(0, tf.int64), tf.constant(0, tf.int64)))[1])))
def checked(x):
    with tf.control_dependencies([tf.debugging.assert_less(x % 5, tf.constant(4, tf.int64), message="x % 5 is 4")]):
        return x * 10


case("map_error", one_shot(lambda: D.range(-3, n).map(checked)))
case("take_all_skip_all", one_shot(lambda: D.range(n).skip(-1).concatenate(D.range(4).take(-1))))

# Files written by TF: text lines and TFRecords, read with file names fed.
lines = ["line %d %s" % (i, "x" * int(rng.integers(0, 9))) for i in range(n)]
with open(os.path.join(out, "lines.txt"), "w") as f:
    f.write("\n".join(lines) + "\n")
with tf.io.TFRecordWriter(os.path.join(out, "records.tfrecord")) as w:
    for i in range(n):
        w.write(rng.bytes(int(rng.integers(0, 40))))
with tf.io.TFRecordWriter(os.path.join(out, "records.gz.tfrecord"), options="GZIP") as w:
    for i in range(3):
        w.write(b"gz%d" % i)
files = lambda: tf.compat.v1.placeholder(tf.string, [None], name="files")
case("text_lines", initializable(lambda: tf.data.TextLineDataset(files()).map(lambda s: (s, tf.strings.join([s, "|"]), tf.strings.to_hash_bucket_fast(s, 1000)))),
     feeds={"files": np.array([b"lines.txt", b"lines.txt"])})
case("tfrecord", initializable(lambda: tf.data.TFRecordDataset(files())),
     feeds={"files": np.array([b"records.tfrecord"])})
case("tfrecord_gzip", initializable(lambda: tf.data.TFRecordDataset(files(), compression_type="GZIP")),
     feeds={"files": np.array([b"records.gz.tfrecord"])})
# A bad record: the file's last byte flipped.
with open(os.path.join(out, "records.tfrecord"), "rb") as f:
    bad = bytearray(f.read())
bad[-1] ^= 0xFF
with open(os.path.join(out, "bad.tfrecord"), "wb") as f:
    f.write(bytes(bad))
case("tfrecord_bad", initializable(lambda: tf.data.TFRecordDataset(files())),
     feeds={"files": np.array([b"bad.tfrecord"])})
case("missing_file", initializable(lambda: tf.data.TextLineDataset(files())),
     feeds={"files": np.array([b"no_such_file.txt"])})



def tf2_case(name, fn, runs=2):
    """The graph of a TF2 tf.function that builds its dataset and iterates
    it (AnonymousIteratorV3, DummySeedGenerator, ShuffleDatasetV3), run by a
    v1 session: each Run makes a new iterator."""
    cf = tf.function(fn).get_concrete_function()
    gd = cf.graph.as_graph_def()
    with open(os.path.join(out, name + ".pbtxt"), "w") as f:
        f.write(str(gd))
    fetches = [t.name for t in cf.outputs]
    g = tf.Graph()
    with g.as_default():
        tf.import_graph_def(gd, name="")
    with tf.compat.v1.Session(graph=g) as s:
        results = [[enc(x) for x in s.run(fetches)] for _ in range(runs)]
    cases.append({"name": name, "fetch": fetches, "results": results})


def tf2_shuffle():
    it = iter(D.range(n * 2).shuffle(5, seed=seed).batch(3))
    return next(it), next(it), next(it)


tf2_case("tf2_anonymous_iterator", tf2_shuffle)

with open(os.path.join(out, "cases.json"), "w") as f:
    json.dump(cases, f, indent=1)
print("wrote %d cases to %s" % (len(cases), out))
