"""The bundled example model against the generator's float64 outputs."""

import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from util import ROOT, mstream  # noqa: E402

DATA = os.path.join(ROOT, "examples", "data")


def read_expected(path):
    """Parses model_test.expected.txt into ({name: array}, {name: array})."""
    inputs, outputs = {}, {}
    with open(path) as f:
        lines = [l.strip() for l in f if l.strip() and not l.startswith("#")]
    for header, values in zip(lines[0::2], lines[1::2]):
        kind, name, dtype, *dims = header.split()
        arr = np.array(values.split(), dtype=np.float64 if kind == "output" else dtype)
        arr = arr.reshape([int(d) for d in dims])
        (inputs if kind == "input" else outputs)[name] = arr
    return inputs, outputs


class BundledModelTest(unittest.TestCase):
    def test_expected_outputs(self):
        inputs, outputs = read_expected(os.path.join(DATA, "model_test.expected.txt"))
        with open(os.path.join(DATA, "config_proto")) as f:
            config = f.read()
        with mstream.Graph.from_file(os.path.join(DATA, "model_test.pbtxt")) as g, \
                mstream.Session(g, config=config) as s:
            got = s.run(list(outputs), inputs)
            for (name, want), arr in zip(outputs.items(), got):
                self.assertEqual(arr.dtype, np.float32, name)
                np.testing.assert_allclose(arr, want, rtol=1e-4, atol=1e-5, err_msg=name)
            # A batch of one row at a time gives the same answers.
            for i in range(2):
                one = {k: v[i:i + 1] for k, v in inputs.items()}
                (row,) = s.run(["output"], one)
                np.testing.assert_allclose(row, outputs["output"][i:i + 1], rtol=1e-4, atol=1e-5)


if __name__ == "__main__":
    unittest.main()
