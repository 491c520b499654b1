# Computes tf.gradients with real TensorFlow 2.15 for grad's tests: for
# each case, the forward GraphDef (base64) is imported, tf.gradients(ys,
# xs) is taken with TF's own Python gradient functions, and the gradients
# are run on the case's feeds. Writes a JSON list: per case, one entry per
# x, a TensorProto (base64) or null for no gradient; or {"error": message}.
#
# Usage: python tfgrad.py IN.json OUT.json
import base64
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402
from tensorflow.core.framework import tensor_pb2  # noqa: E402

tf.compat.v1.disable_eager_execution()
cases = json.load(open(sys.argv[1]))
out = []
for c in cases:
    try:
        g = tf.Graph()
        with g.as_default():
            gd = tf.compat.v1.GraphDef()
            gd.ParseFromString(base64.b64decode(c["graph"]))
            tf.import_graph_def(gd, name="")
            ys = [g.get_tensor_by_name(n) for n in c["ys"]]
            xs = [g.get_tensor_by_name(n) for n in c["xs"]]
            grads = tf.gradients(ys, xs)
            grads = [tf.convert_to_tensor(x) if x is not None else None for x in grads]
            feeds = {}
            for name, p in c["feeds"].items():
                tp = tensor_pb2.TensorProto()
                tp.ParseFromString(base64.b64decode(p))
                feeds[g.get_tensor_by_name(name)] = tf.make_ndarray(tp)
            with tf.compat.v1.Session(graph=g) as s:
                vals = s.run([x for x in grads if x is not None], feeds)
            res, k = [], 0
            for x in grads:
                if x is None:
                    res.append(None)
                    continue
                res.append(base64.b64encode(tf.make_tensor_proto(vals[k]).SerializeToString()).decode())
                k += 1
            out.append(res)
    except Exception as e:  # noqa: BLE001
        out.append({"error": "%s: %s" % (type(e).__name__, str(e)[:300])})
json.dump(out, open(sys.argv[2], "w"))
