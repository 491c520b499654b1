"""Hostile sizes and malformed Const tensors, differential against real
TensorFlow 2.15: each case gets TF's status code (or TF's value), the
message names the node, the process never aborts, and the session answers
the next Run. The host device is capped at 64 MiB (MSTREAM_HOST_MEMORY_MB,
read when the session is made) and the sizes go far beyond it and beyond the
machine, where TF fails too. TF runs in its own process
(tf_hostile_oracle.py with build/venv's python); without TensorFlow the test
is skipped and says so."""

import json
import os
import subprocess
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from util import ROOT, mstream  # noqa: E402

BIG = "dim { size: 1000000 } dim { size: 1000000 }"
E12 = 10 ** 12


def _ph(name, dt):
    return "node { name: '%s' op: 'Placeholder' attr { key: 'dtype' value { type: %s } } }\n" % (name, dt)


def _const(name, dt, shape, vals=""):
    return ("node { name: '%s' op: 'Const' attr { key: 'dtype' value { type: %s } } attr { key: 'value' "
            "value { tensor { dtype: %s tensor_shape { %s } %s } } } }\n" % (name, dt, dt, shape, vals))


# name: (GraphDef text, fetch, {feed: (value, numpy dtype)})
CASES = {
    "const_float_1e12": (_const("c", "DT_FLOAT", BIG), "c", {}),
    "const_string_1e12": (_const("c", "DT_STRING", BIG), "c", {}),
    "const_content_short": (_const("c", "DT_FLOAT", "dim { size: 3 }", "tensor_content: 'abcd'"), "c", {}),
    "const_extra_values": (_const("c", "DT_FLOAT", "dim { size: 2 }", "float_val: 1 float_val: 2 float_val: 3"), "c", {}),
    "const_one_value": (_const("c", "DT_INT32", "dim { size: 3 }", "int_val: 7"), "c", {}),
    "const_extra_strings": (_const("c", "DT_STRING", "dim { size: 1 }", "string_val: 'a' string_val: 'b'"), "c", {}),
    "pad_1e12": (_ph("x", "DT_FLOAT") + _ph("p", "DT_INT64") +
                 "node { name: 'pad' op: 'Pad' input: 'x' input: 'p' attr { key: 'T' value { type: DT_FLOAT } } "
                 "attr { key: 'Tpaddings' value { type: DT_INT64 } } }\n",
                 "pad", {"x": ([1, 2], "float32"), "p": ([[0, E12]], "int64")}),
    "broadcast_to_1e12": (_ph("x", "DT_FLOAT") + _ph("s", "DT_INT64") +
                          "node { name: 'bt' op: 'BroadcastTo' input: 'x' input: 's' attr { key: 'T' value { type: DT_FLOAT } } "
                          "attr { key: 'Tidx' value { type: DT_INT64 } } }\n",
                          "bt", {"x": ([1], "float32"), "s": ([E12], "int64")}),
    "fill_string_1e12": (_ph("d", "DT_INT64") + _const("v", "DT_STRING", "", "string_val: 'ab'") +
                         "node { name: 'fill' op: 'Fill' input: 'd' input: 'v' attr { key: 'T' value { type: DT_STRING } } "
                         "attr { key: 'index_type' value { type: DT_INT64 } } }\n",
                         "fill", {"d": ([E12], "int64")}),
    "fill_float_1e12": (_ph("d", "DT_INT64") + _const("v", "DT_FLOAT", "", "float_val: 1") +
                        "node { name: 'fill' op: 'Fill' input: 'd' input: 'v' attr { key: 'T' value { type: DT_FLOAT } } "
                        "attr { key: 'index_type' value { type: DT_INT64 } } }\n",
                        "fill", {"d": ([E12], "int64")}),
    "tile_string_1e12": (_ph("x", "DT_STRING") + _ph("m", "DT_INT64") +
                         "node { name: 'tile' op: 'Tile' input: 'x' input: 'm' attr { key: 'T' value { type: DT_STRING } } "
                         "attr { key: 'Tmultiples' value { type: DT_INT64 } } }\n",
                         "tile", {"x": ([b"ab"], "object"), "m": ([E12], "int64")}),
}

GOOD = _ph("gx", "DT_FLOAT") + "node { name: 'gneg' op: 'Neg' input: 'gx' attr { key: 'T' value { type: DT_FLOAT } } }\n"


def tf_results():
    py = os.path.join(ROOT, "build", "venv", "bin", "python")
    if not os.path.exists(os.path.join(ROOT, "build", "venv", ".tf-ok")) or not os.access(py, os.X_OK):
        return None
    r = subprocess.run([py, os.path.join(os.path.dirname(os.path.abspath(__file__)), "tf_hostile_oracle.py")],
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError("TF oracle failed: " + r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


class HostileTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tf = tf_results()

    def test_cases_match_tf(self):
        if self.tf is None:
            print("skipped: no TensorFlow", file=sys.stderr)
            self.skipTest("no TensorFlow")
        saved = os.environ.get("MSTREAM_HOST_MEMORY_MB")
        os.environ["MSTREAM_HOST_MEMORY_MB"] = "64"
        try:
            for name, (text, fetch, feeds) in CASES.items():
                with self.subTest(name):
                    self.check(name, text, fetch, feeds)
        finally:
            if saved is None:
                del os.environ["MSTREAM_HOST_MEMORY_MB"]
            else:
                os.environ["MSTREAM_HOST_MEMORY_MB"] = saved

    def check(self, name, text, fetch, feeds):
        want_code, want_value = self.tf[name]
        g = mstream.Graph.from_text(text + GOOD)
        s = mstream.Session(g)
        try:
            vals = {k: np.array(v, dtype=dt) for k, (v, dt) in feeds.items()}
            try:
                got = s.run(fetch, vals)
                code = 0
            except mstream.TFError as e:
                code, got = int(e.code), None
                self.assertIn("'%s'" % fetch if code == 3 else "{{node %s}}" % fetch, str(e), "message names the node")
            self.assertEqual(code, want_code, "TF gives code %d" % want_code)
            if want_code == 0:
                g_ = np.asarray(got)
                w = np.asarray(want_value, dtype=g_.dtype if g_.dtype != object else object)
                if g_.dtype == object:
                    g_ = np.vectorize(lambda b: b.decode() if isinstance(b, bytes) else b)(g_)
                np.testing.assert_array_equal(g_, w)
            x = np.random.default_rng().standard_normal(3).astype(np.float32)
            np.testing.assert_array_equal(s.run("gneg", {"gx": x}), -x)
        finally:
            s.close()
            g.close()


if __name__ == "__main__":
    unittest.main()
