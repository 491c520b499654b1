"""Runs single ops in real TensorFlow 2.15 for kernels/cpu's TF tests.

  tf_ops.py CASES.json  reads a list of {op, inputs: {arg: TensorProto or
  [TensorProto...]}, attrs: {name: AttrValue}} (protos base64-encoded),
  calls tf.raw_ops.<op> eagerly on the CPU with each, and prints for each
  case {"out": [TensorProto...]} or {"code": TF's error code, "msg": ...}.
  Attrs that raw_ops infers from the inputs (T, N, ...) are dropped.
"""
import base64
import inspect
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf
from tensorflow.core.framework import attr_value_pb2, tensor_pb2


def tensor(b):
    p = tensor_pb2.TensorProto.FromString(base64.b64decode(b))
    return tf.constant(tf.make_ndarray(p), dtype=tf.as_dtype(p.dtype))


def attr(b):
    a = attr_value_pb2.AttrValue.FromString(base64.b64decode(b))
    k = a.WhichOneof("value")
    if k == "list":
        for f in ("s", "i", "f", "b", "type", "shape"):
            v = list(getattr(a.list, f))
            if v:
                if f == "type":
                    return [tf.as_dtype(x) for x in v]
                if f == "shape":
                    return [tf.TensorShape(x) for x in v]
                return v
        return []
    if k == "type":
        return tf.as_dtype(a.type)
    if k == "s":
        return a.s
    return getattr(a, k)


def flat(x):
    if isinstance(x, (list, tuple)):
        return [y for e in x for y in flat(e)]
    return [x]


def main(path):
    res = []
    with tf.device("/CPU:0"):
        for c in json.load(open(path)):
            fn = getattr(tf.raw_ops, c["op"])
            params = inspect.signature(fn).parameters
            kw = {k: [tensor(x) for x in v] if isinstance(v, list) else tensor(v) for k, v in c["inputs"].items()}
            kw.update({k: attr(v) for k, v in c["attrs"].items() if k in params})
            try:
                out = flat(fn(**kw))
                res.append({"out": [base64.b64encode(tf.make_tensor_proto(o.numpy() if o.dtype != tf.string else o.numpy(), dtype=o.dtype).SerializeToString()).decode() for o in out]})
            except tf.errors.OpError as e:
                res.append({"code": e.error_code, "msg": e.message})
    json.dump(res, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
