"""TF 2.15's tf.function graphs through the C API: function libraries,
calls, If/Case/While (test/functions, written by its gen.py from real TF
with TF's outputs), run with the library and compared with TF's values or
error codes."""

import json
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from util import ROOT, mstream  # noqa: E402

DIR = os.path.join(ROOT, "test", "functions")


def decode(v):
    return np.array(v["values"], dtype=v["dtype"]).reshape(v["shape"])


class FunctionsTest(unittest.TestCase):
    def test_cases(self):
        with open(os.path.join(DIR, "cases.json")) as f:
            cases = json.load(f)["cases"]
        self.assertTrue(cases)
        for c in cases:
            with self.subTest(case=c["name"]):
                with mstream.Graph.from_file(os.path.join(DIR, c["graph"])) as g:
                    s = mstream.Session(g)
                    try:
                        for k, r in enumerate(c["runs"]):
                            feeds = {name: decode(v) for name, v in r["feeds"].items()}
                            if "error" in r:
                                with self.assertRaises(mstream.TFError) as e:
                                    s.run(r["fetches"], feeds)
                                self.assertEqual(int(e.exception.code), r["error"]["code"], e.exception.message)
                                self.assertIn(r["error"]["message"], e.exception.message)
                                continue
                            try:
                                got = s.run(r["fetches"], feeds)
                            except mstream.TFError as e:
                                # Ops whose kernels may be missing yet.
                                if any("op %s " % op in e.message for op in c.get("needs", [])):
                                    continue
                                raise
                            for name, w, v in zip(r["fetches"], r["want"], got):
                                want = decode(w)
                                self.assertEqual(v.shape, want.shape, "run %d %s" % (k, name))
                                np.testing.assert_allclose(v, want, rtol=1e-5, atol=1e-5, err_msg="run %d %s" % (k, name))
                    finally:
                        s.close()


if __name__ == "__main__":
    unittest.main()
