"""Real TensorFlow's side of session/checkpoint_test.go.

  tf_saverestore.py DIR  builds a graph of SaveV2, RestoreV2,
  MergeV2Checkpoints, ShardedFilename and ShardedFilespec nodes, writes it to
  DIR/graph.pb, runs its steps in TF with the prefixes under DIR/tf and prints
  as JSON each step (its feeds, fetches, targets) and TF's result: the fetched
  tensors, or the error code.
"""
import base64
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import tensorflow as tf

v1 = tf.compat.v1
v1.disable_eager_execution()


def enc(a, dt):
    a = np.asarray(a)
    if dt == tf.string:
        data = [base64.b64encode(x).decode() for x in np.asarray(a, dtype=object).reshape(-1)]
    else:
        data = base64.b64encode(a.tobytes()).decode()
    return {"dtype": dt.as_datatype_enum, "shape": list(a.shape), "data": data}


def late(v):
    """A constant that graph-time shape inference does not see, so that the
    bad specs fail when run, where the kernels' errors are compared."""
    return v1.placeholder_with_default(tf.constant(v), [len(v)])


def main(d):
    rng = np.random.default_rng(int(os.environ.get("SEED", "1")))
    g = tf.Graph()
    with g.as_default():
        prefix = v1.placeholder(tf.string, [], name="prefix")
        p0 = v1.placeholder(tf.string, [], name="p0")
        p1 = v1.placeholder(tf.string, [], name="p1")
        merged = v1.placeholder(tf.string, [], name="merged")
        nodir = v1.placeholder(tf.string, [], name="nodir")
        vals = {
            "f32": tf.constant(rng.normal(size=(4, 3)).astype(np.float32)),
            "f64": tf.constant(rng.normal(size=(2,))),
            "i64": tf.constant(int(rng.integers(-2**62, 2**62)), dtype=tf.int64),
            "str": tf.constant([b"", b"abc", bytes(rng.integers(0, 256, 200, dtype=np.uint8))]),
            "bool": tf.constant(rng.integers(0, 2, (3, 1)).astype(bool)),
            "half": tf.constant(rng.normal(size=(5,)).astype(np.float16)),
            "i8/empty": tf.zeros([0, 2], tf.int8),
            "u16": tf.constant(rng.integers(0, 65535, (2, 2)), dtype=tf.uint16),
            "c64": tf.constant((rng.normal(size=(2,)) + 1j * rng.normal(size=(2,))).astype(np.complex64)),
        }
        names = sorted(vals, key=lambda k: -len(k))  # not sorted by key: the data order is the names'
        dts = [vals[k].dtype for k in names]
        save = tf.raw_ops.SaveV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                                 tensors=[vals[k] for k in names], name="save")
        rest = tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=names, shape_and_slices=[""] * len(names),
                                    dtypes=dts, name="restore_all")
        tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=["f32", "bool", "f32"], shape_and_slices=["4 3 1,2:-", "3 1 2,1:-", "4 3 -:-"],
                             dtypes=[tf.float32, tf.bool, tf.float32], name="restore_slice")
        tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=["u16"], shape_and_slices=["2 2 -:1,1"],
                             dtypes=[tf.uint16], name="restore_slice_u16")
        tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=["nope"], shape_and_slices=[""], dtypes=[tf.float32], name="missing_key")
        tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=["f32", "i64"], shape_and_slices=["", ""], dtypes=[tf.float64, tf.int32], name="bad_dtype")
        tf.raw_ops.RestoreV2(prefix="no/such/ckpt", tensor_names=["f32"], shape_and_slices=[""], dtypes=[tf.float32], name="missing_file")
        tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=["f32"], shape_and_slices=late(["4 3 0,9:-"]), dtypes=[tf.float32], name="bad_spec")
        tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=["f32"], shape_and_slices=late(["5 3 -:-"]), dtypes=[tf.float32], name="wrong_shape")
        tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=["f32"], shape_and_slices=late(["4 3 x"]), dtypes=[tf.float32], name="garbled_spec")
        # Slices saved by SaveV2, restored whole and in part.
        full = tf.constant(rng.normal(size=(6, 2)).astype(np.float32))
        save0 = tf.raw_ops.SaveV2(prefix=p0, tensor_names=["part", "a"], shape_and_slices=["6 2 0,4:-", ""],
                                  tensors=[full[:4], tf.constant([1, 2, 3])], name="save0")
        save1 = tf.raw_ops.SaveV2(prefix=p1, tensor_names=["part", "b"], shape_and_slices=["6 2 4,2:-", ""],
                                  tensors=[full[4:], tf.constant([b"x", b""])], name="save1")
        tf.raw_ops.MergeV2Checkpoints(checkpoint_prefixes=tf.stack([p0, p1]), destination_prefix=merged, name="merge")
        tf.raw_ops.RestoreV2(prefix=merged, tensor_names=["part", "a", "b", "part"], shape_and_slices=["", "", "", "6 2 3,2:0,1"],
                             dtypes=[tf.float32, tf.int32, tf.string, tf.float32], name="restore_merged")
        tf.raw_ops.SaveV2(prefix=prefix, tensor_names=["x"], shape_and_slices=late(["4 3 0,2:-"]), tensors=[vals["f32"]], name="save_bad_slice")
        tf.raw_ops.SaveV2(prefix=nodir, tensor_names=["x"], shape_and_slices=[""], tensors=[vals["f64"]], name="save_no_dir")
        tf.raw_ops.SaveV2(prefix=prefix, tensor_names=["x", "y"], shape_and_slices=["", ""], tensors=[vals["f64"], vals["f64"]], name="save_dup_ok")
        tf.raw_ops.ShardedFilename(basename=prefix, shard=3, num_shards=12, name="sharded_name")
        tf.raw_ops.ShardedFilespec(basename=prefix, num_shards=7, name="sharded_spec")
        tf.raw_ops.ShardedFilename(basename=v1.placeholder_with_default(tf.constant([b"a"]), None), shard=3, num_shards=12, name="sharded_bad")

    with open(os.path.join(d, "graph.pb"), "wb") as f:
        f.write(g.as_graph_def().SerializeToString())
    feeds = {"prefix": "{dir}/ckpt", "p0": "{dir}/tmp0/part", "p1": "{dir}/tmp1/part", "merged": "{dir}/merged",
             "nodir": "{dir}/missing/sub/x"}
    steps = [
        {"targets": ["save"]},
        {"targets": ["save0", "save1"]},
        {"targets": ["merge"]},
        {"fetch": ["restore_all:%d" % i for i in range(len(names))]},
        {"fetch": ["restore_slice:0", "restore_slice:1", "restore_slice:2"]},
        {"fetch": ["restore_slice_u16:0"]},
        {"fetch": ["restore_merged:%d" % i for i in range(4)]},
        {"fetch": ["missing_key:0"]},
        {"fetch": ["bad_dtype:0"]},
        {"fetch": ["missing_file:0"]},
        {"fetch": ["bad_spec:0"]},
        {"fetch": ["wrong_shape:0"]},
        {"fetch": ["garbled_spec:0"]},
        {"targets": ["save_bad_slice"]},
        {"targets": ["save_no_dir"]},
        {"targets": ["save_dup_ok"]},
        {"fetch": ["sharded_name:0", "sharded_spec:0"]},
        {"fetch": ["sharded_bad:0"]},
    ]
    os.makedirs(os.path.join(d, "tf"), exist_ok=True)
    with v1.Session(graph=g) as s:
        fd = {g.get_tensor_by_name(k + ":0"): v.format(dir=os.path.join(d, "tf")) for k, v in feeds.items()}
        for st in steps:
            fetch = [g.get_tensor_by_name(x) for x in st.get("fetch", [])]
            targets = [g.get_operation_by_name(x) for x in st.get("targets", [])]
            try:
                out = s.run(fetch + targets, feed_dict=fd)[:len(fetch)]
                st["out"] = [enc(o, t.dtype) for o, t in zip(out, fetch)]
            except tf.errors.OpError as e:
                st["code"], st["msg"] = e.error_code, e.message
    json.dump({"feeds": feeds, "steps": steps}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
