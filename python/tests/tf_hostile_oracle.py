"""Runs the hostile cases of test_hostile.py through real TensorFlow 2.15 and
prints, as JSON, each case's TF status code (0 for OK) and, for OK, the
fetched value as a list. Run by
test_hostile.py with build/venv's python, in its own process (TF's and
mstream's C APIs must not share one)."""

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from google.protobuf import text_format  # noqa: E402
from tensorflow.core.framework import graph_pb2  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_hostile import CASES  # noqa: E402

tf1 = tf.compat.v1
out = {}
for name, (text, fetch, feeds) in CASES.items():
    g = tf.Graph()
    try:
        with g.as_default():
            tf1.import_graph_def(text_format.Parse(text, graph_pb2.GraphDef()), name="")
        with tf1.Session(graph=g) as s:
            fd = {g.get_tensor_by_name(k + ":0"): np.array(v[0], dtype=v[1]) for k, v in feeds.items()}
            r = s.run(g.get_tensor_by_name(fetch + ":0"), fd)
            v = np.asarray(r)
            if v.dtype == object:
                v = np.vectorize(lambda b: b.decode())(v)
            out[name] = [0, v.tolist()]
    except tf.errors.OpError as e:
        out[name] = [e.error_code, None]
print(json.dumps(out))
