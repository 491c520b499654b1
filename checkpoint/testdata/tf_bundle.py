"""Real TensorFlow's side of checkpoint/bundle_test.go.

  write DIR     writes DIR/tf (tf.raw_ops.SaveV2 over cases()), DIR/sliced
                (tensors saved as slices), DIR/merged (two saves merged with
                MergeV2Checkpoints), DIR/obj (tf.train.Checkpoint) and
                DIR/v1/model (a sharded v1 Saver over a partitioned variable);
                prints as JSON the cases, their order, and what read() gives
                for each of those prefixes.
  read PREFIX.. reads every tensor of each PREFIX with tf.train.load_checkpoint
                and again with tf.raw_ops.RestoreV2, checks they agree, and
                prints them as JSON, by prefix.
"""
import base64
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import tensorflow as tf

DTYPES = [tf.float32, tf.float64, tf.float16, tf.bfloat16, tf.int8, tf.int16,
          tf.int32, tf.int64, tf.uint8, tf.uint16, tf.uint32, tf.uint64,
          tf.bool, tf.complex64, tf.complex128, tf.string]
SHAPES = [(), (0,), (3,), (2, 3), (2, 0, 4), (3, 1, 2, 2)]


def cases(seed):
    rng = np.random.default_rng(seed)
    out = {}
    for dt in DTYPES:
        for sh in SHAPES:
            n = int(np.prod(sh))
            if dt == tf.string:
                vals = [bytes(rng.integers(0, 256, int(rng.integers(0, 40)), dtype=np.uint8)) for _ in range(n)]
                if n > 2:
                    vals[1] = b""
                    vals[2] = b"x" * 300  # a two-byte varint length
                v = tf.constant(np.array(vals, dtype=object).reshape(sh), dtype=tf.string)
            elif dt == tf.bool:
                v = tf.constant(rng.integers(0, 2, sh).astype(bool))
            elif dt.is_complex:
                v = tf.complex(tf.constant(rng.normal(size=sh)), tf.constant(rng.normal(size=sh)))
                v = tf.cast(v, dt)
            elif dt.is_floating:
                v = tf.cast(tf.constant(rng.normal(size=sh) * 100), dt)
            else:
                lo, hi = max(dt.min, -2**62), min(dt.max, 2**62)
                v = tf.constant(rng.integers(lo, hi, sh, endpoint=True, dtype=np.int64 if dt != tf.uint64 else np.uint64), dtype=dt)
            out["%s/%s" % (dt.name, "x".join(map(str, sh)) or "scalar")] = v
    return out


def enc(t):
    t = tf.convert_to_tensor(t)
    if t.dtype == tf.string:
        data = [base64.b64encode(x).decode() for x in np.asarray(t.numpy(), dtype=object).reshape(-1)]
    else:
        # Raw little-endian bytes, as the bundle stores them.
        data = base64.b64encode(t.numpy().tobytes() if t.dtype != tf.bfloat16 else tf.bitcast(t, tf.uint16).numpy().tobytes()).decode()
    return {"dtype": t.dtype.as_datatype_enum, "shape": list(t.shape), "data": data}


def write(d):
    cs = cases(int(os.environ.get("SEED", "1")))
    names = list(cs)
    tf.raw_ops.SaveV2(prefix=os.path.join(d, "tf"), tensor_names=names,
                      shape_and_slices=[""] * len(names), tensors=[cs[k] for k in names])
    # Slices: rows 0-1 and 2-4 of a 5x3 tensor, and a whole tensor.
    full = tf.reshape(tf.range(15, dtype=tf.float32), [5, 3])
    ints = tf.constant([[1, -2], [3, -4], [5, -6]], dtype=tf.int64)
    tf.raw_ops.SaveV2(prefix=os.path.join(d, "sliced"), tensor_names=["p", "p", "w", "w", "whole"],
                      shape_and_slices=["5 3 0,2:-", "5 3 2,3:-", "3 2 -:0,1", "3 2 -:1,1", "2 0,2"],
                      tensors=[full[:2], full[2:], ints[:, :1], ints[:, 1:], tf.constant([b"a", b"bc"])])
    # Two shards merged, as a sharded Saver does.
    a, b = os.path.join(d, "tmp", "part-0"), os.path.join(d, "tmp", "part-1")
    os.makedirs(os.path.join(d, "tmp"), exist_ok=True)
    tf.raw_ops.SaveV2(prefix=a, tensor_names=["s/a", "s/c"], shape_and_slices=["", ""],
                      tensors=[tf.constant([1.5, 2.5]), tf.constant([b"x", b"yz"])])
    tf.raw_ops.SaveV2(prefix=b, tensor_names=["s/b"], shape_and_slices=[""],
                      tensors=[tf.constant([[7, 8, 9]], dtype=tf.int64)])
    tf.raw_ops.MergeV2Checkpoints(checkpoint_prefixes=[a, b], destination_prefix=os.path.join(d, "merged"))
    # An object-based checkpoint and a v1 Saver with partitioned variables.
    ck = tf.train.Checkpoint(v=tf.Variable([[1.0, 2.0], [3.0, 4.0]]), step=tf.Variable(7, dtype=tf.int64),
                             s=tf.Variable("hello"))
    ck.write(os.path.join(d, "obj"))
    g = tf.Graph()
    with g.as_default():
        v = tf.compat.v1.get_variable("part", shape=[6, 2], initializer=tf.compat.v1.random_normal_initializer(seed=1),
                                      partitioner=tf.compat.v1.fixed_size_partitioner(3))
        saver = tf.compat.v1.train.Saver(sharded=True)
        os.makedirs(os.path.join(d, "v1"), exist_ok=True)
        with tf.compat.v1.Session(graph=g) as s:
            s.run(tf.compat.v1.global_variables_initializer())
            saver.save(s, os.path.join(d, "v1", "model"), write_meta_graph=False)
    prefixes = ["tf", "sliced", "merged", "obj", "v1/model"]
    json.dump({"order": names, "cases": {k: enc(v) for k, v in cs.items()},
               "read": {p: read(os.path.join(d, p)) for p in prefixes}}, sys.stdout)


def read(prefix):
    r = tf.train.load_checkpoint(prefix)
    dtypes = r.get_variable_to_dtype_map()
    out = {}
    for k in sorted(dtypes):
        v = r.get_tensor(k)
        dt = dtypes[k]
        (w,) = tf.raw_ops.RestoreV2(prefix=prefix, tensor_names=[k], shape_and_slices=[""], dtypes=[dt])
        t = tf.constant(v, dtype=dt)
        e1, e2 = enc(t), enc(w)
        if e1 != e2:
            raise SystemExit("load_checkpoint and RestoreV2 disagree on " + k)
        out[k] = e2
    return out


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2])
    else:
        json.dump({p: read(p) for p in sys.argv[2:]}, sys.stdout)
