"""Numbers through the library checked against NumPy on fresh random inputs."""

import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from util import DTYPES, graph, int32_const, mstream, node, placeholder, type_attr  # noqa: E402


def mlp_graph():
    f = type_attr("float32")
    return graph(
        placeholder("x", "float32", [-1, 24]),
        placeholder("w", "float32", [24, 40]),
        placeholder("b", "float32", [40]),
        node("mm", "MatMul", ["x", "w"], T=f, transpose_a="b: false", transpose_b="b: false"),
        node("ba", "BiasAdd", ["mm", "b"], T=f, data_format='s: "NHWC"'),
        node("relu", "Relu", ["ba"], T=f),
        node("softmax", "Softmax", ["ba"], T=f),
    )


class MLPTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.graph = mstream.Graph.from_text(mlp_graph())
        cls.session = mstream.Session(cls.graph, config="intra_op_parallelism_threads: 2")

    @classmethod
    def tearDownClass(cls):
        cls.session.close()
        cls.graph.close()

    def feeds(self, batch):
        rng = np.random.default_rng()
        return {
            "x": rng.standard_normal((batch, 24)).astype(np.float32),
            "w": rng.standard_normal((24, 40)).astype(np.float32),
            "b": rng.standard_normal(40).astype(np.float32),
        }

    def test_matmul_biasadd_relu(self):
        for batch in (1, 7, 64):
            f = self.feeds(batch)
            relu, mm = self.session.run(["relu", "mm:0"], f)
            want = f["x"].astype(np.float64) @ f["w"].astype(np.float64)
            self.assertEqual(relu.dtype, np.float32)
            self.assertEqual(relu.shape, (batch, 40))
            np.testing.assert_allclose(mm, want, rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(relu, np.maximum(want + f["b"], 0), rtol=1e-4, atol=1e-4)

    def test_signatures_reused_and_grown(self):
        # Session.run keeps each (feeds, fetches, targets) signature's
        # arrays and Graph the outputs it found: the same names in another
        # order, a feed dict in another order and a name the graph gains
        # later must all still be right.
        f = self.feeds(3)
        relu, mm = self.session.run(["relu", "mm"], f)
        mm2, relu2 = self.session.run(["mm", "relu"], dict(reversed(list(f.items()))))
        np.testing.assert_array_equal(relu, relu2)
        np.testing.assert_array_equal(mm, mm2)
        with mstream.Graph.from_text(mlp_graph()) as g, mstream.Session(g) as s:
            with self.assertRaises(mstream.TFError) as e:
                s.run("extra/relu", f)
            self.assertEqual(e.exception.code, mstream.Code.NOT_FOUND)
            g.import_graph_def(mstream.graph_def_text_to_binary(mlp_graph()), prefix="extra")
            f2 = dict(f, **{"extra/" + k: v for k, v in f.items()})
            np.testing.assert_array_equal(s.run("extra/relu", f2), relu)

    def test_softmax(self):
        f = self.feeds(16)
        got = self.session.run("softmax", f)
        z = f["x"].astype(np.float64) @ f["w"].astype(np.float64) + f["b"]
        e = np.exp(z - z.max(axis=1, keepdims=True))
        np.testing.assert_allclose(got, e / e.sum(axis=1, keepdims=True), rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(got.sum(axis=1), np.ones(16), rtol=1e-5)

    def test_wrong_dtype_feed(self):
        f = self.feeds(4)
        f["x"] = f["x"].astype(np.float64)
        with self.assertRaises(mstream.TFError) as cm:
            self.session.run(["relu"], f)
        self.assertEqual(cm.exception.code, mstream.Code.INVALID_ARGUMENT)
        # The session stays usable after a failed run.
        self.assertEqual(self.session.run("relu", self.feeds(2)).shape, (2, 40))

    def test_unknown_fetch(self):
        with self.assertRaises(mstream.TFError) as cm:
            self.session.run(["no_such_node"], self.feeds(2))
        self.assertEqual(cm.exception.code, mstream.Code.NOT_FOUND)
        self.assertIn("no_such_node", cm.exception.message)

    def test_concurrent_runs(self):
        import threading
        errors = []

        def work():
            try:
                for _ in range(20):
                    f = self.feeds(8)
                    got = self.session.run("relu", f)
                    want = np.maximum(f["x"].astype(np.float64) @ f["w"] + f["b"], 0)
                    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
            except Exception as e:  # reported by the main thread
                errors.append(e)

        threads = [threading.Thread(target=work) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])


class GatherTest(unittest.TestCase):
    def test_gather_v2(self):
        txt = graph(
            placeholder("params", "float32", [-1, 8]),
            placeholder("ids32", "int32", [-1]),
            placeholder("ids64", "int64", [-1, 3]),
            int32_const("axis", [0]),
            node("g32", "GatherV2", ["params", "ids32", "axis"], Tparams=type_attr("float32"),
                 Tindices=type_attr("int32"), Taxis=type_attr("int32"), batch_dims="i: 0"),
            node("g64", "GatherV2", ["params", "ids64", "axis"], Tparams=type_attr("float32"),
                 Tindices=type_attr("int64"), Taxis=type_attr("int32"), batch_dims="i: 0"),
        )
        rng = np.random.default_rng()
        params = rng.standard_normal((50, 8)).astype(np.float32)
        ids32 = rng.integers(0, 50, size=17).astype(np.int32)
        ids64 = rng.integers(0, 50, size=(5, 3)).astype(np.int64)
        with mstream.Graph.from_text(txt) as g, mstream.Session(g) as s:
            a, b = s.run(["g32", "g64"], {"params": params, "ids32": ids32, "ids64": ids64})
            np.testing.assert_array_equal(a, params[ids32])
            np.testing.assert_array_equal(b, params[ids64])
            bad = ids32.copy()
            bad[3] = 50
            with self.assertRaises(mstream.TFError) as cm:
                s.run("g32", {"params": params, "ids32": bad})
            self.assertEqual(cm.exception.code, mstream.Code.INVALID_ARGUMENT)


class StringTest(unittest.TestCase):
    def test_string_identity(self):
        txt = graph(placeholder("s", "string", [-1]),
                    node("id", "Identity", ["s"], T=type_attr("string")))
        vals = np.array([b"", b"short", b"x" * 100, "ünïcode".encode()], dtype=object)
        with mstream.Graph.from_text(txt) as g, mstream.Session(g) as s:
            got = s.run("id", {"s": vals})
            self.assertEqual(list(got), list(vals))


class ScalarTest(unittest.TestCase):
    """0-d feeds and fetches of every dtype keep shape () (NumPy 1.24's
    np.ascontiguousarray made them [1], failing every scalar placeholder)."""

    def test_scalars_every_dtype(self):
        rng = np.random.default_rng()
        for name in sorted(DTYPES):
            with self.subTest(dtype=name):
                txt = graph(placeholder("x", name, []),
                            node("y", "Identity", ["x"], T=type_attr(name)))
                if name == "string":
                    values = [np.array(b"scalar", dtype=object), b"bytes", "text"]
                elif name == "bool":
                    values = [np.array(True), np.bool_(False), True]
                elif name.startswith("complex"):
                    z = complex(*rng.standard_normal(2))
                    values = [np.array(z, dtype=name), np.dtype(name).type(z)]
                elif name.startswith("float"):
                    values = [np.array(rng.standard_normal(), dtype=name),
                              np.dtype(name).type(rng.standard_normal())]
                    if name == "float64":
                        values.append(float(rng.standard_normal()))
                else:
                    hi = min(np.iinfo(name).max, 1 << 40)
                    values = [np.array(rng.integers(1, hi), dtype=name),
                              np.dtype(name).type(rng.integers(1, hi))]
                    if name == "int64":
                        values.append(int(rng.integers(1, hi)))
                with mstream.Graph.from_text(txt) as g, mstream.Session(g) as s:
                    for v in values:
                        got = s.run("y", {"x": v})
                        self.assertEqual(got.shape, (), "fed %r" % (v,))
                        want = np.asarray(v)
                        if name == "string":
                            want = v.encode() if isinstance(v, str) else want.item()
                            self.assertEqual(got.item(), want)
                            continue
                        self.assertEqual(got.dtype, np.dtype(name))
                        self.assertEqual(got.item(), want.astype(name).item())


class StrictTextTest(unittest.TestCase):
    """Text protos are parsed as strictly as TF's parser: an unknown field is
    INVALID_ARGUMENT with its line and column (proto/pbparse checks the
    positions against TF's own parser)."""

    def test_typo_in_graph(self):
        with self.assertRaises(mstream.TFError) as cm:
            mstream.Graph.from_text('node { name: "a" op: "NoOp" }\nnodes {\n}\n')
        self.assertEqual(cm.exception.code, mstream.Code.INVALID_ARGUMENT)
        self.assertIn("line 2, column 1: unknown field: nodes", cm.exception.message)

    def test_garbage(self):
        with self.assertRaises(mstream.TFError) as cm:
            mstream.Graph.from_text("garbage text")
        self.assertEqual(cm.exception.code, mstream.Code.INVALID_ARGUMENT)

    def test_typo_in_config(self):
        with mstream.Graph.from_text(graph(placeholder("x", "float32", []))) as g:
            with self.assertRaises(mstream.TFError) as cm:
                mstream.Session(g, config="intra_op_paralelism_threads: 2")
        self.assertEqual(cm.exception.code, mstream.Code.INVALID_ARGUMENT)
        self.assertIn("line 1, column 1: unknown field: intra_op_paralelism_threads",
                      cm.exception.message)

    def test_file_named(self):
        import tempfile
        with tempfile.TemporaryDirectory() as d:
            for name, data in (("typo.pbtxt", b"nodes {}"), ("bad.pb", b"\x0a\x09\x01")):
                path = os.path.join(d, name)
                with open(path, "wb") as f:
                    f.write(data)
                with self.assertRaises(mstream.TFError) as cm:
                    mstream.Graph.from_file(path)
                self.assertEqual(cm.exception.code, mstream.Code.INVALID_ARGUMENT)
                self.assertTrue(cm.exception.message.startswith(path + ": "), cm.exception.message)


class ErrorsTest(unittest.TestCase):
    def test_bad_text(self):
        with self.assertRaises(mstream.TFError) as cm:
            mstream.Graph.from_text("node { name: ")
        self.assertEqual(cm.exception.code, mstream.Code.INVALID_ARGUMENT)

    def test_bad_binary(self):
        with self.assertRaises(mstream.TFError) as cm:
            mstream.Graph.from_bytes(b"\xff\xff\xff\xff\x0f garbage")
        self.assertEqual(cm.exception.code, mstream.Code.INVALID_ARGUMENT)

    def test_unknown_op(self):
        with self.assertRaises(mstream.TFError) as cm:
            mstream.Graph.from_text(graph(node("n", "NoSuchOpAnywhere", [])))
        self.assertEqual(cm.exception.code, mstream.Code.NOT_FOUND)

    def test_versions(self):
        self.assertEqual(mstream.tf_version(), "2.15.0")
        self.assertTrue(mstream.version())


if __name__ == "__main__":
    unittest.main()
