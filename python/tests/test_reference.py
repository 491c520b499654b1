"""The bundled expected outputs, recomputed with NumPy from the model file.

Needs no library: it checks the generator's float64 reference (which the
library's test trusts) against a second implementation reading the weights
straight from model_test.pbtxt.
"""

import os
import re
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from util import ROOT  # noqa: E402
from test_bundled_model import DATA, read_expected  # noqa: E402

_ESC = {b"n": 10, b"r": 13, b"t": 9, b'"': 34, b"'": 39, b"\\": 92}


def unescape(s):
    """Decodes a protobuf text-format string literal body (bytes)."""
    out = bytearray()
    i = 0
    while i < len(s):
        c = s[i:i + 1]
        if c != b"\\":
            out += c
            i += 1
            continue
        n = s[i + 1:i + 2]
        if n == b"x":
            m = re.match(rb"[0-9a-fA-F]{1,2}", s[i + 2:i + 4])
            out.append(int(m.group(0), 16))
            i += 2 + len(m.group(0))
        elif n in (b"u", b"U"):
            # A valid UTF-8 sequence for a non-printable rune, written as
            # its code point: emit the sequence's bytes.
            width = 4 if n == b"u" else 8
            out += chr(int(s[i + 2:i + 2 + width], 16)).encode("utf-8", "surrogatepass")
            i += 2 + width
        elif n.isdigit():
            m = re.match(rb"[0-7]{1,3}", s[i + 1:i + 4])
            out.append(int(m.group(0), 8))
            i += 1 + len(m.group(0))
        else:
            out.append(_ESC[n])
            i += 2
    return bytes(out)


def read_weights(path):
    """{node name: float32 array (flat)} for every Const with tensor_content."""
    weights, name, depth = {}, None, 0
    with open(path, "rb") as f:
        for line in f:
            line = line.strip()
            if depth == 1 and line.startswith(b"name:"):
                name = line.split(b'"', 1)[1].rsplit(b'"', 1)[0].decode()
            if line.startswith(b"tensor_content:"):
                body = line.split(b'"', 1)[1].rsplit(b'"', 1)[0]
                weights[name] = np.frombuffer(unescape(body), dtype="<f4")
            if b'"' not in line:  # braces inside strings do not nest
                depth += line.count(b"{") - line.count(b"}")
    return weights


class ReferenceTest(unittest.TestCase):
    def test_expected_matches_numpy(self):
        w = read_weights(os.path.join(DATA, "model_test.pbtxt"))
        inputs, outputs = read_expected(os.path.join(DATA, "model_test.expected.txt"))
        parts = [inputs["dense"].astype(np.float64)]
        for k in range(4):
            table = w["embedding_%d/table" % k].astype(np.float64).reshape(-1, 16)
            parts.append(table[inputs["ids_%d" % k].reshape(-1)])
        x = np.concatenate(parts, axis=1)
        for i in range(3):
            b = w["mlp/layer_%d/bias" % i].astype(np.float64)
            k = w["mlp/layer_%d/kernel" % i].astype(np.float64).reshape(x.shape[1], b.size)
            x = x @ k + b
            if i < 2:
                x = np.maximum(x, 0)
        got = 1 / (1 + np.exp(-x))
        np.testing.assert_allclose(got, outputs["output"], rtol=1e-12, atol=1e-12)


if __name__ == "__main__":
    unittest.main()
