"""The TF_* / MSTREAM_* knobs are read when a session is made, from the C
environment: os.environ set after the library is loaded takes effect, as it
does with TensorFlow (which calls getenv then)."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from util import graph, mstream, node, placeholder, type_attr  # noqa: E402

VAR = "TF_GPU_STREAM_GROUP_COUNT"


class EnvAtNewSessionTest(unittest.TestCase):
    def setUp(self):
        mstream.library()  # loaded before the variable is set
        self.saved = os.environ.pop(VAR, None)
        self.graph = mstream.Graph.from_text(graph(
            placeholder("x", "float32", [-1]),
            node("y", "Neg", ["x"], T=type_attr("float32"))))

    def tearDown(self):
        os.environ.pop(VAR, None)
        if self.saved is not None:
            os.environ[VAR] = self.saved
        self.graph.close()

    def groups(self):
        s = mstream.Session(self.graph)
        try:
            st = s.stats()
            return len(st["groups"]), st["knobs"][VAR]
        finally:
            s.close()

    def test_set_after_load(self):
        for value, want in (("2", 2), ("3", 3)):
            os.environ[VAR] = value
            self.assertEqual(self.groups(), (want, value))
        del os.environ[VAR]
        self.assertEqual(self.groups(), (1, "1"))

    def test_bad_value_fails_new_session(self):
        os.environ[VAR] = "abc"
        with self.assertRaises(mstream.TFError) as cm:
            mstream.Session(self.graph)
        self.assertEqual(cm.exception.code, mstream.Code.INVALID_ARGUMENT)
        self.assertIn(VAR, str(cm.exception))


if __name__ == "__main__":
    unittest.main()
