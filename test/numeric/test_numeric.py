"""Kernels through libmstream.so checked against NumPy on fresh random inputs.

Each case builds a one-op graph (placeholders in, the op, its output fetched),
runs it on new random inputs for float32 and float64 (and int32 where the op
takes it), and compares with a float64 NumPy reference under a tolerance that
fits the dtype. The seed is printed on failure so a case can be replayed with
MSTREAM_TEST_SEED.
"""

import os
import sys
import unittest

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))
import mstream  # noqa: E402

DT = {np.float32: "DT_FLOAT", np.float64: "DT_DOUBLE", np.int32: "DT_INT32", np.int64: "DT_INT64"}
FLOATS = (np.float32, np.float64)
# Relative-and-absolute tolerance per dtype for elementwise results; reductions
# and products scale it by the length of what they sum.
TOL = {np.float32: 2e-6, np.float64: 1e-14, np.int32: 0, np.int64: 0}

CHECKS = 0  # comparisons that passed, for test/run.sh's "N passed, M failed"
SEED = int(os.environ.get("MSTREAM_TEST_SEED", int.from_bytes(os.urandom(4), "little")))


def ph(name, dtype):
    return ('node { name: "%s" op: "Placeholder" attr { key: "dtype" value { type: %s } } }\n'
            % (name, DT[dtype]))


def attr_text(v):
    if isinstance(v, bool):
        return "b: %s" % ("true" if v else "false")
    if isinstance(v, int):
        return "i: %d" % v
    if isinstance(v, str):
        return 's: "%s"' % v
    if isinstance(v, type):
        return "type: %s" % DT[v]
    if isinstance(v, list):
        return "list { %s }" % " ".join("type: %s" % DT[t] for t in v)
    raise TypeError(v)


def op_graph(op, inputs, **attrs):
    """A graph with one placeholder per (name, dtype) in inputs and node 'out'."""
    txt = "".join(ph(n, d) for n, d in inputs)
    txt += 'node { name: "out" op: "%s" ' % op
    txt += "".join('input: "%s" ' % n for n, _ in inputs)
    txt += "".join('attr { key: "%s" value { %s } } ' % (k, attr_text(v)) for k, v in sorted(attrs.items()))
    return txt + "}\nversions { producer: 1645 }\n"


class NumericTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.rng = np.random.default_rng(SEED)

    def run_op(self, op, feeds, **attrs):
        inputs = [(n, v.dtype.type) for n, v in feeds.items()]
        with mstream.Graph.from_text(op_graph(op, inputs, **attrs)) as g, mstream.Session(g) as s:
            return s.run("out", feeds)

    def rand(self, shape, dtype):
        if dtype in (np.int32, np.int64):
            return self.rng.integers(-50, 50, size=shape).astype(dtype)
        return self.rng.standard_normal(shape).astype(dtype)

    def check(self, got, want, dtype, scale=1):
        msg = "seed %d (MSTREAM_TEST_SEED)" % SEED
        self.assertEqual(got.dtype, np.dtype(dtype), msg)
        self.assertEqual(got.shape, np.shape(want), msg)
        tol = TOL[dtype] * scale
        if tol == 0:
            np.testing.assert_array_equal(got, want, err_msg=msg)
        else:
            np.testing.assert_allclose(got.astype(np.float64), want, rtol=tol, atol=tol, err_msg=msg)
        global CHECKS
        CHECKS += 1

    def test_matmul(self):
        for dt in FLOATS:
            for m, k, n in ((1, 1, 1), (7, 33, 5), (64, 200, 48)):
                for ta in (False, True):
                    for tb in (False, True):
                        with self.subTest(dtype=dt.__name__, mkn=(m, k, n), ta=ta, tb=tb):
                            a = self.rand((k, m) if ta else (m, k), dt)
                            b = self.rand((n, k) if tb else (k, n), dt)
                            got = self.run_op("MatMul", {"a": a, "b": b}, T=dt, transpose_a=ta, transpose_b=tb)
                            a64, b64 = a.astype(np.float64), b.astype(np.float64)
                            want = (a64.T if ta else a64) @ (b64.T if tb else b64)
                            self.check(got, want, dt, scale=4 * k)
        a, b = self.rand((5, 9), np.int32), self.rand((9, 4), np.int32)
        self.check(self.run_op("MatMul", {"a": a, "b": b}, T=np.int32), a @ b, np.int32)

    def test_batch_matmul_v2(self):
        for dt in FLOATS:
            with self.subTest(dtype=dt.__name__):
                a = self.rand((3, 1, 4, 6), dt)
                b = self.rand((5, 6, 2), dt)
                got = self.run_op("BatchMatMulV2", {"x": a, "y": b}, T=dt, adj_x=False, adj_y=False)
                self.check(got, a.astype(np.float64) @ b.astype(np.float64), dt, scale=24)
                a2 = self.rand((2, 6, 4), dt)
                got = self.run_op("BatchMatMulV2", {"x": a2, "y": b[:2].transpose(0, 2, 1).copy()}, T=dt,
                                  adj_x=True, adj_y=True)
                want = a2.astype(np.float64).transpose(0, 2, 1) @ b[:2].astype(np.float64)
                self.check(got, want, dt, scale=24)

    def test_bias_add(self):
        for dt in FLOATS + (np.int32,):
            with self.subTest(dtype=dt.__name__):
                x, b = self.rand((6, 3, 11), dt), self.rand((11,), dt)
                self.check(self.run_op("BiasAdd", {"v": x, "b": b}, T=dt, data_format="NHWC"),
                           x.astype(np.float64) + b, dt)

    def test_softmax(self):
        for dt in FLOATS:
            for shape in ((1, 1), (9, 31), (4, 1000)):
                with self.subTest(dtype=dt.__name__, shape=shape):
                    x = self.rand(shape, dt) * 10
                    got = self.run_op("Softmax", {"logits": x}, T=dt)
                    z = x.astype(np.float64)
                    e = np.exp(z - z.max(axis=-1, keepdims=True))
                    self.check(got, e / e.sum(axis=-1, keepdims=True), dt, scale=8)

    def test_unary(self):
        refs = {
            "Relu": lambda z: np.maximum(z, 0),
            "Sigmoid": lambda z: 1 / (1 + np.exp(-z)),
            "Tanh": np.tanh,
        }
        for op, ref in refs.items():
            for dt in FLOATS:
                with self.subTest(op=op, dtype=dt.__name__):
                    x = self.rand((5, 37), dt) * 4
                    self.check(self.run_op(op, {"x": x}, T=dt) if op != "Relu" else
                               self.run_op(op, {"features": x}, T=dt), ref(x.astype(np.float64)), dt, scale=4)

    def test_binary_broadcast(self):
        refs = {
            "AddV2": np.add, "Add": np.add, "Sub": np.subtract, "Mul": np.multiply,
            "RealDiv": np.divide, "Maximum": np.maximum, "Minimum": np.minimum,
        }
        shapes = (((4, 5), (4, 5)), ((3, 1, 5), (4, 1)), ((), (2, 3)), ((7,), ()), ((2, 1, 3), (1, 4, 1)))
        for op, ref in refs.items():
            for dt in FLOATS + (np.int32,):
                if op == "RealDiv" and dt is np.int32:
                    continue
                for sa, sb in shapes:
                    with self.subTest(op=op, dtype=dt.__name__, shapes=(sa, sb)):
                        a, b = self.rand(sa, dt), self.rand(sb, dt)
                        if op == "RealDiv":
                            b = np.where(np.abs(b) < 0.1, dt(0.5), b).astype(dt)
                        got = self.run_op(op, {"x": a, "y": b}, T=dt)
                        want = ref(a.astype(np.float64), b.astype(np.float64))
                        if dt is np.int32:
                            want = want.astype(np.int32)
                        self.check(got, want, dt)

    def test_reductions(self):
        for op, ref in (("Sum", np.sum), ("Mean", np.mean)):
            for dt in FLOATS + (np.int32,):
                for axes, keep in (([1], False), ([0, 2], True), ([-1], False), ([0, 1, 2], False)):
                    with self.subTest(op=op, dtype=dt.__name__, axes=axes, keep=keep):
                        x = self.rand((6, 5, 40), dt)
                        txt = (ph("x", dt)
                               + 'node { name: "axes" op: "Const" attr { key: "dtype" value { type: DT_INT32 } } '
                               'attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: %d } } %s } } } }\n'
                               % (len(axes), " ".join("int_val: %d" % a for a in axes))
                               + 'node { name: "out" op: "%s" input: "x" input: "axes" attr { key: "T" value { %s } } '
                               'attr { key: "Tidx" value { type: DT_INT32 } } attr { key: "keep_dims" value { b: %s } } }\n'
                               % (op, attr_text(dt), "true" if keep else "false"))
                        with mstream.Graph.from_text(txt) as g, mstream.Session(g) as s:
                            got = s.run("out", {"x": x})
                        want = ref(x.astype(np.float64), axis=tuple(axes), keepdims=keep)
                        if dt is np.int32:
                            want = (np.sum(x.astype(np.int64), axis=tuple(axes), keepdims=keep) if op == "Sum" else
                                    np.trunc(want)).astype(np.int32)
                        self.check(got, want, dt, scale=1200)

    def test_cast(self):
        x = self.rand((8, 9), np.float64) * 1e3
        # Casts are exact: the reference is NumPy's own cast.
        got = self.run_op("Cast", {"x": x}, SrcT=np.float64, DstT=np.float32, Truncate=False)
        self.check(got, x.astype(np.float32), np.float32, scale=0)
        got = self.run_op("Cast", {"x": x}, SrcT=np.float64, DstT=np.int32, Truncate=False)
        self.check(got, x.astype(np.int32), np.int32)
        i = self.rand((20,), np.int32)
        got = self.run_op("Cast", {"x": i}, SrcT=np.int32, DstT=np.float64, Truncate=False)
        self.check(got, i.astype(np.float64), np.float64, scale=0)

    def test_mlp_float64(self):
        """A small MLP in float64 end to end: MatMul, BiasAdd, Relu, MatMul, Softmax."""
        txt = "".join(ph(n, np.float64) for n in ("x", "w1", "b1", "w2"))
        txt += ('node { name: "h" op: "MatMul" input: "x" input: "w1" attr { key: "T" value { type: DT_DOUBLE } } }\n'
                'node { name: "hb" op: "BiasAdd" input: "h" input: "b1" attr { key: "T" value { type: DT_DOUBLE } } }\n'
                'node { name: "hr" op: "Relu" input: "hb" attr { key: "T" value { type: DT_DOUBLE } } }\n'
                'node { name: "o" op: "MatMul" input: "hr" input: "w2" attr { key: "T" value { type: DT_DOUBLE } } }\n'
                'node { name: "out" op: "Softmax" input: "o" attr { key: "T" value { type: DT_DOUBLE } } }\n')
        f = {"x": self.rand((32, 50), np.float64), "w1": self.rand((50, 64), np.float64),
             "b1": self.rand((64,), np.float64), "w2": self.rand((64, 10), np.float64)}
        with mstream.Graph.from_text(txt) as g, mstream.Session(g, config="intra_op_parallelism_threads: 2") as s:
            got = s.run("out", f)
        z = np.maximum(f["x"] @ f["w1"] + f["b1"], 0) @ f["w2"]
        e = np.exp(z - z.max(axis=1, keepdims=True))
        self.check(got, e / e.sum(axis=1, keepdims=True), np.float64, scale=1e3)


if __name__ == "__main__":
    result = unittest.main(exit=False, verbosity=0).result
    failed = len(result.failures) + len(result.errors)
    print("%d passed, %d failed" % (CHECKS, failed))
    sys.exit(1 if failed else 0)
