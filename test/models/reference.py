"""References for the field models of test/models, and the plans that the C
runner (runner.c) executes.

    build/venv/bin/python test/models/reference.py OUTDIR --tf [--seed N] [CASE...]
    /usr/bin/python3 test/models/reference.py OUTDIR [--seed N] [CASE...]

For every case of models.json it draws the inputs (NumPy, seeded), computes
the fetched tensors and writes
OUTDIR/<case>.plan plus one raw data file per fed or expected tensor. With
--tf the values come from TensorFlow 2.15 itself (a tf.compat.v1 Session
running the same GraphDef with the same feeds, mappings and config); a case
that expects values TF cannot compute is reported and fails the run. Without
TF they come from the small GraphDef interpreter below. The
OUTDIR/<case>.plan plus one raw data file per fed or expected tensor. The
interpreter implements each op from TensorFlow's documented semantics in
float64 NumPy; nothing in it comes from libmstream, so a match is evidence
and not a tautology. Cases whose expectation is an error get a plan without
expected values; cases marked "reference": "none" are run without a check of
the values (the runner says so).
"""

import json
import os
import sys

import numpy as np

import pbtxt

HERE = os.path.dirname(os.path.abspath(__file__))

# TF_DataType values (tensorflow/c/tf_datatype.h).
TF_DTYPE = {"float32": 1, "float64": 2, "int32": 3, "uint8": 4, "int16": 5, "int8": 6,
            "string": 7, "int64": 9, "bool": 10, "quint8": 12, "bfloat16": 14,
            "float16": 19}
FROM_PROTO = {"DT_FLOAT": "float32", "DT_DOUBLE": "float64", "DT_INT32": "int32",
              "DT_UINT8": "uint8", "DT_INT8": "int8", "DT_STRING": "string",
              "DT_INT64": "int64", "DT_BOOL": "bool", "DT_QUINT8": "quint8",
              "DT_BFLOAT16": "bfloat16", "DT_HALF": "float16"}
NP = {"float32": np.float32, "float64": np.float64, "int32": np.int32, "uint8": np.uint8,
      "int8": np.int8, "int64": np.int64, "bool": np.bool_, "float16": np.float16,
      "quint8": np.uint8}


class Dead:
    """The value of a tensor on an untaken Switch branch."""


DEAD = Dead()


def bf16_bits_to_f32(bits):
    return (np.asarray(bits, dtype=np.uint32) << 16).view(np.float32)


def const_value(node):
    t = pbtxt.attr(node, "value")["tensor"][0]
    dt = t["dtype"][0]
    if dt == "DT_BFLOAT16":
        dims = pbtxt.shape_dims(t.get("tensor_shape", [{}])[0])
        n = int(np.prod(dims)) if dims else 1
        if "tensor_content" in t:
            bits = np.frombuffer(t["tensor_content"][0], dtype=np.uint16)
        else:
            vals = [int(v) for v in t.get("half_val", [])] or [0]
            bits = np.array([vals[min(i, len(vals) - 1)] for i in range(n)], dtype=np.uint16)
        return bf16_bits_to_f32(bits).reshape(dims)
    if dt == "DT_QUINT8":
        t = dict(t)
        t["dtype"] = ["DT_UINT8"]
    return pbtxt.tensor_value(t)


# ---- op semantics --------------------------------------------------------

def conv_out(size, k, stride, dil, padding, explicit=None):
    ek = (k - 1) * dil + 1
    if padding == "VALID":
        out = (size - ek) // stride + 1
        return out, 0
    if padding == "SAME":
        out = -(-size // stride)
        total = max((out - 1) * stride + ek - size, 0)
        return out, total // 2
    before, after = explicit
    return (size + before + after - ek) // stride + 1, before


def conv2d(x, w, strides, dilations, padding, explicit=None):
    """NHWC input, HWIO filter, direct sum over the window (float64)."""
    n, h, wd, c = x.shape
    kh, kw, ci, co = w.shape
    if ci != c:
        raise ValueError("conv2d: depth %d vs filter %d" % (c, ci))
    sh, sw = strides[1], strides[2]
    dh, dw = dilations[1], dilations[2]
    ex_h = explicit[2:4] if explicit else None
    ex_w = explicit[4:6] if explicit else None
    oh, ph = conv_out(h, kh, sh, dh, padding, ex_h)
    ow, pw = conv_out(wd, kw, sw, dw, padding, ex_w)
    out = np.zeros((n, oh, ow, co))
    for i in range(kh):
        for j in range(kw):
            rows = np.arange(oh) * sh + i * dh - ph
            cols = np.arange(ow) * sw + j * dw - pw
            rv = (rows >= 0) & (rows < h)
            cv = (cols >= 0) & (cols < wd)
            patch = np.zeros((n, oh, ow, c))
            patch[:, rv[:, None] & cv[None, :]] = \
                x[:, rows[rv]][:, :, cols[cv]].reshape(n, -1, c)
            out += patch @ w[i, j]
    return out


def max_pool(x, ksize, strides, padding):
    n, h, wd, c = x.shape
    kh, kw = ksize[1], ksize[2]
    sh, sw = strides[1], strides[2]
    oh, ph = conv_out(h, kh, sh, 1, padding)
    ow, pw = conv_out(wd, kw, sw, 1, padding)
    out = np.full((n, oh, ow, c), -np.inf)
    for i in range(kh):
        for j in range(kw):
            rows = np.arange(oh) * sh + i - ph
            cols = np.arange(ow) * sw + j - pw
            rv = (rows >= 0) & (rows < h)
            cv = (cols >= 0) & (cols < wd)
            patch = np.full((n, oh, ow, c), -np.inf)
            patch[:, rv[:, None] & cv[None, :]] = \
                x[:, rows[rv]][:, :, cols[cv]].reshape(n, -1, c)
            out = np.maximum(out, patch)
    return out


def fake_quant(x, lo, hi, num_bits, narrow):
    """TF's FakeQuant: nudge [lo, hi] so that zero lands on the integer grid,
    clamp, snap to the grid. In float32, step by step as TF's kernel, so that
    values on a rounding boundary go the same way."""
    f = np.float32
    qmin = f(1 if narrow else 0)
    qmax = f((1 << num_bits) - 1)
    lo, hi = f(lo), f(hi)
    scale = (hi - lo) / (qmax - qmin)
    inv = (qmax - qmin) / (hi - lo)
    zp_from_min = qmin - lo / scale
    if zp_from_min < qmin:
        zp = qmin
    elif zp_from_min > qmax:
        zp = qmax
    else:
        zp = f(np.floor(zp_from_min + f(0.5)))  # round half away from zero (>= 0 here)
    nmin = (qmin - zp) * scale
    nmax = (qmax - zp) * scale
    qzero = np.floor(-nmin * inv + f(0.5))
    c = np.clip(np.asarray(x, f), nmin, nmax) - nmin
    return (np.floor(c * inv - qzero + f(0.5)) * scale).astype(f)


def attr_val(node, key, default=None):
    a = pbtxt.attr(node, key)
    if a is None:
        return default
    if "list" in a:
        lst = a["list"][0]
        if "i" in lst:
            return [int(v) for v in lst["i"]]
        if "type" in lst:
            return list(lst["type"])
        return []
    if "s" in a:
        return a["s"][0].decode()
    if "i" in a:
        return int(a["i"][0])
    if "f" in a:
        return float(a["f"][0])
    if "b" in a:
        return a["b"][0] in ("true", "True", "1")
    if "type" in a:
        return a["type"][0]
    return default


def binary(fn):
    def run(node, ins):
        a, b = ins
        return [fn(a, b)]
    return run


def int_div(a, b):
    """TF's Div/RealDiv: real division for floats, truncation toward zero
    for integers (Div)."""
    if np.issubdtype(np.asarray(a).dtype, np.integer):
        q = np.abs(a) // np.abs(b)
        return (np.sign(a) * np.sign(b) * q).astype(np.asarray(a).dtype)
    return a / b


def split(node, ins):
    dim, v = ins
    n = attr_val(node, "num_split")
    return np.split(v, n, axis=int(dim))


def concat(node, ins):
    *vals, axis = ins
    return [np.concatenate(vals, axis=int(axis))]


def gather(node, ins):
    params, idx, axis = ins
    if attr_val(node, "batch_dims", 0):
        raise NotImplementedError("GatherV2 batch_dims")
    return [np.take(params, idx, axis=int(axis))]


def bias_add(node, ins):
    v, b = ins
    if attr_val(node, "data_format", "NHWC") == "NCHW":
        return [v + b.reshape((-1,) + (1,) * (v.ndim - 2))]
    return [v + b]


def fused_batch_norm(node, ins):
    x, scale, offset, mean, var = ins[:5]
    if attr_val(node, "is_training", True):
        raise NotImplementedError("FusedBatchNorm training mode")
    eps = attr_val(node, "epsilon", 1e-4)
    y = (x - mean) / np.sqrt(var + eps) * scale + offset
    return [y, mean, var, mean, var, np.zeros(0)]


def batch_norm_global(node, ins):
    x, m, v, beta, gamma = ins
    eps = attr_val(node, "variance_epsilon")
    y = (x - m) / np.sqrt(v + eps)
    if attr_val(node, "scale_after_normalization"):
        y = y * gamma
    return [y + beta]


def matmul(node, ins):
    a, b = ins
    if attr_val(node, "transpose_a", False):
        a = a.T
    if attr_val(node, "transpose_b", False):
        b = b.T
    return [a @ b]


def batch_matmul(node, ins):
    a, b = ins
    if attr_val(node, "adj_x", False):
        a = np.swapaxes(a, -1, -2)
    if attr_val(node, "adj_y", False):
        b = np.swapaxes(b, -1, -2)
    return [np.matmul(a, b)]


def conv2d_op(node, ins):
    x, w = ins
    if attr_val(node, "data_format", "NHWC") != "NHWC":
        raise NotImplementedError("Conv2D NCHW")
    return [conv2d(x, w, attr_val(node, "strides"), attr_val(node, "dilations", [1, 1, 1, 1]),
                   attr_val(node, "padding"), attr_val(node, "explicit_paddings", []))]


def max_pool_op(node, ins):
    return [max_pool(ins[0], attr_val(node, "ksize"), attr_val(node, "strides"),
                     attr_val(node, "padding"))]


def fq_vars(node, ins):
    x, lo, hi = ins
    return [fake_quant(x, float(lo), float(hi), attr_val(node, "num_bits", 8),
                       attr_val(node, "narrow_range", False))]


def fq_vars_per_channel(node, ins):
    x, lo, hi = ins
    out = np.empty(x.shape, np.float32)
    for c in range(x.shape[-1]):
        out[..., c] = fake_quant(x[..., c], lo[c], hi[c], attr_val(node, "num_bits", 8),
                                 attr_val(node, "narrow_range", False))
    return [out]


def fq_args(node, ins):
    return [fake_quant(ins[0], attr_val(node, "min", -6.0), attr_val(node, "max", 6.0),
                       attr_val(node, "num_bits", 8), attr_val(node, "narrow_range", False))]


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


OPS = {
    "Identity": lambda n, i: [i[0]],
    "StopGradient": lambda n, i: [i[0]],
    "IdentityN": lambda n, i: list(i),
    "Add": binary(np.add), "AddV2": binary(np.add), "Sub": binary(np.subtract),
    "Mul": binary(np.multiply), "RealDiv": binary(np.divide), "Div": binary(int_div),
    "Maximum": binary(np.maximum), "Minimum": binary(np.minimum),
    "Less": binary(np.less), "Equal": binary(np.equal),
    "Relu": lambda n, i: [np.maximum(i[0], 0)],
    "Sigmoid": lambda n, i: [sigmoid(i[0])],
    "Tanh": lambda n, i: [np.tanh(i[0])],
    "MatMul": matmul, "BatchMatMulV2": batch_matmul,
    "Conv2D": conv2d_op, "MaxPool": max_pool_op, "BiasAdd": bias_add,
    "FusedBatchNorm": fused_batch_norm,
    "BatchNormWithGlobalNormalization": batch_norm_global,
    "Split": split, "ConcatV2": concat, "GatherV2": gather,
    "Reshape": lambda n, i: [np.reshape(i[0], [int(d) for d in i[1]])],
    "FakeQuantWithMinMaxVars": fq_vars,
    "FakeQuantWithMinMaxVarsPerChannel": fq_vars_per_channel,
    "FakeQuantWithMinMaxArgs": fq_args,
}


class Graph:
    """Evaluates fetched tensors of a GraphDef, TF-style: feeds replace any
    tensor, control inputs are ordering only, Switch/Merge follow TF's
    dead-tensor rule (a node with a dead input is dead, except Merge)."""

    def __init__(self, gdef, feeds):
        self.nodes = pbtxt.nodes(gdef)
        self.feeds = feeds          # "name:index" -> array
        self.memo = {}

    @staticmethod
    def split_name(s):
        if ":" in s:
            n, i = s.rsplit(":", 1)
            return n, int(i)
        return s, 0

    def tensor(self, ref):
        name, idx = self.split_name(ref)
        key = "%s:%d" % (name, idx)
        if key in self.feeds:
            return self.feeds[key]
        return self.outputs(name)[idx]

    def outputs(self, name):
        if name in self.memo:
            return self.memo[name]
        node = self.nodes[name]
        op = node["op"][0].decode()
        data_ins = [i.decode() for i in node.get("input", []) if not i.startswith(b"^")]
        ctrl = [i.decode()[1:] for i in node.get("input", []) if i.startswith(b"^")]
        dead_ctrl = any(self.outputs(c) is DEAD or any(v is DEAD for v in self.outputs(c))
                        for c in ctrl if not self.fed_node(c))
        if op == "Merge":
            vals = [self.tensor(i) for i in data_ins]
            live = [(k, v) for k, v in enumerate(vals) if v is not DEAD]
            out = [live[0][1], np.int32(live[0][0])] if live else [DEAD, DEAD]
        else:
            ins = [self.tensor(i) for i in data_ins]
            if dead_ctrl or any(v is DEAD for v in ins):
                out = [DEAD] * 8
            elif op == "Const":
                out = [const_value(node)]
            elif op in ("Placeholder", "PlaceholderWithDefault"):
                if op == "PlaceholderWithDefault":
                    out = [ins[0]]
                else:
                    raise KeyError("placeholder %s is not fed" % name)
            elif op == "NoOp":
                out = []
            elif op == "Switch":
                v, pred = ins
                out = [DEAD, v] if bool(pred) else [v, DEAD]
            elif op in OPS:
                out = OPS[op](node, ins)
            else:
                raise NotImplementedError("reference has no op %s (node %s)" % (op, name))
        self.memo[name] = out
        return out

    def fed_node(self, name):
        return any(k.startswith(name + ":") for k in self.feeds)


# ---- inputs and plans ----------------------------------------------------

def draw(rng, spec):
    dt = spec["dtype"]
    shape = tuple(spec.get("shape", []))
    if "values" in spec:
        if dt == "string":
            v = np.array([s.encode() for s in spec["values"]], dtype=object)
            return v.reshape(shape)
        return np.array(spec["values"], dtype=NP[dt]).reshape(shape)
    dist = spec.get("dist", "normal")
    if dt == "string":
        out = np.empty(int(np.prod(shape)), dtype=object)
        for i in range(out.size):
            n = rng.integers(0, 12)
            # Arbitrary bytes, embedded NULs included.
            out[i] = bytes(rng.integers(0, 256, n, dtype=np.uint8))
        return out.reshape(shape)
    if dt == "bool":
        return rng.integers(0, 2, shape).astype(np.bool_)
    if dist.startswith("int:"):
        lo, hi = (int(x) for x in dist[4:].split(":"))
        return rng.integers(lo, hi, shape).astype(NP[dt])
    scale = spec.get("scale", 1.0)
    if dist == "uniform":
        return (rng.random(shape) * scale).astype(NP[dt])
    return (rng.standard_normal(shape) * scale).astype(NP[dt])


def write_tensor(path, arr, dt):
    with open(path, "wb") as f:
        if dt == "string":
            for s in np.asarray(arr, dtype=object).ravel():
                f.write(len(s).to_bytes(8, "little"))
                f.write(s)
        elif dt == "bfloat16":
            bits = np.asarray(arr, np.float32).view(np.uint32) >> 16
            f.write(bits.astype("<u2").tobytes())
        else:
            f.write(np.ascontiguousarray(arr, dtype=NP[dt]).astype(np.dtype(NP[dt]).newbyteorder("<")).tobytes())


def tf_outputs(case, model, feeds):
    """The fetched tensors as TensorFlow computes them: the model imported
    with the case's input mappings and config, run by a tf.compat.v1
    Session with the same feeds. Returns (values, None), or (None, error)
    when TF itself fails the case."""
    import tensorflow as tf
    from google.protobuf import text_format

    gd = tf.compat.v1.GraphDef()
    data = open(model, "rb").read()
    if model.endswith(".pb"):
        gd.ParseFromString(data)
    else:
        text_format.Parse(data.decode(), gd)
    cfg = tf.compat.v1.ConfigProto()
    if "config" in case:
        text_format.Parse(case["config"], cfg)
    g = tf.Graph()
    try:
        with g.as_default():
            imap = {}
            for m in case.get("input_map", []):
                ph = tf.compat.v1.placeholder(tf.as_dtype(m["dtype"]), name=m["placeholder"])
                imap["%s:%d" % (m["source"], m.get("index", 0))] = ph
            tf.import_graph_def(gd, input_map=imap, name="")
        with tf.compat.v1.Session(graph=g, config=cfg) as sess:
            fd = {g.get_tensor_by_name(k): v for k, v in feeds.items()}
            fetches = [f["name"] if ":" in f["name"] else f["name"] + ":0"
                       for f in case.get("fetches", [])]
            outs = sess.run(fetches, fd)
            return [np.asarray(o, dtype=object) if o.dtype == object else o for o in outs], None
    except (ValueError, tf.errors.OpError) as e:
        msg = getattr(e, "message", str(e))
        return None, "%s: %s" % (type(e).__name__, " ".join(msg.split())[:400])


def reference_outputs(case, gdef, feeds):
    kind = case.get("reference", "graph")
    if USE_TF:
        model = os.path.join(HERE, case["model"])
        refs, err = tf_outputs(case, model, feeds)
        if err is not None and "Cannot assign a device" in err and "config" not in case:
            # Nodes pinned to a GPU this machine lacks: TF's values are
            # those of the same graph with soft placement (mstream places
            # them on the CPU without being asked: a known divergence).
            print("reference: %s: TF wants allow_soft_placement (%s)" % (case["name"], err[:160]))
            refs, err = tf_outputs(dict(case, config="allow_soft_placement: true"), model, feeds)
        if err is None:
            SOURCE[case["name"]] = "TF"
            return refs
        # A case that expects values from a graph TF cannot run is a wrong
        # test: say so, and keep the NumPy values so the run still checks.
        print("reference: FAIL %s: TF 2.15 does not run it (%s)" % (case["name"], err))
        BAD.append(case["name"])
    if kind == "none":
        return None
    SOURCE[case["name"]] = "NumPy"
    if kind == "graph":
        g = Graph(gdef, feeds)
        return [g.tensor(f["name"]) for f in case["fetches"]]
    return CUSTOM[kind](feeds)


def if_op(feeds):
    a, b = feeds["a:0"], feeds["b:0"]
    cst0 = np.array([1.0, 2.0, 3.0, 4.0])
    cst1 = np.array([5.0, 6.0, 7.0, 8.0])
    stateful = cst0 + cst1 if a < b else a * cst1
    stateless = a - b if a == b else a / b
    return [stateful, stateless]


def while_v1(feeds):
    i = np.int32(0)
    while i < 10:
        i = i + np.int32(1)
    return [i]


CUSTOM = {"if_op": if_op, "while_v1": while_v1}


def plan_case(case, outdir, rng):
    name = case["name"]
    model = os.path.join(HERE, case["model"])
    lines = ["case " + name, "model " + model]
    if "config" in case:
        cfg = os.path.join(outdir, name + ".config")
        with open(cfg, "w") as f:
            f.write(case["config"])
        lines.append("config " + cfg)
    for m in case.get("input_map", []):
        lines.append("map %s %d %s %d" % (m["source"], m.get("index", 0), m["placeholder"],
                                          TF_DTYPE[m["dtype"]]))
    feeds = {}
    for k, spec in enumerate(case.get("feeds", [])):
        ref = spec["name"] if ":" in spec["name"] else spec["name"] + ":0"
        if "same_as" in spec:
            arr = feeds[spec["same_as"] + ":0"]
        else:
            arr = draw(rng, spec)
        feeds[ref] = arr
        path = os.path.join(outdir, "%s.in%d" % (name, k))
        write_tensor(path, arr, spec["dtype"])
        n, i = ref.rsplit(":", 1)
        lines.append("feed %s %s %d %d %s %s" % (n, i, TF_DTYPE[spec["dtype"]], arr.ndim,
                                                " ".join(str(d) for d in arr.shape) or "-", path))
    for t in case.get("targets", []):
        lines.append("target " + t)
    expect = case.get("expect", "ok")
    refs = None
    if isinstance(expect, str) or "xfail" in expect:
        gdef = pbtxt.load(model)
        refs = reference_outputs(case, gdef, feeds)
    for k, f in enumerate(case.get("fetches", [])):
        ref = f["name"] if ":" in f["name"] else f["name"] + ":0"
        n, i = ref.rsplit(":", 1)
        dt = f["dtype"]
        rtol, atol = f.get("tol", case.get("tol", [1e-5, 1e-5]))
        if refs is None:
            lines.append("fetch %s %s %d - - - %g %g" % (n, i, TF_DTYPE[dt], rtol, atol))
            continue
        val = refs[k]
        if val is DEAD:
            raise ValueError("%s: fetch %s is dead in the reference" % (name, ref))
        val = np.asarray(val, dtype=object if dt == "string" else None)
        if dt not in ("string", "bfloat16"):
            val = val.astype(np.float64 if dt in ("float32", "float16") else NP[dt])
        path = os.path.join(outdir, "%s.out%d" % (name, k))
        # float32 and float16 references keep float64 precision on disk.
        write_tensor(path, val, "float64" if dt in ("float32", "float16") else dt)
        lines.append("fetch %s %s %d %d %s %s %g %g" % (
            n, i, TF_DTYPE[dt], val.ndim, " ".join(str(d) for d in val.shape) or "-", path,
            rtol, atol))
    if isinstance(expect, str):
        lines.append("expect ok")
    elif "xfail" in expect:
        lines.append("expect xfail " + " ".join(expect["xfail"]))
    else:
        e = expect["error"]
        lines.append("expect error %s %s" % (e["stage"], e["code"]))
        for s in e.get("contains", []):
            lines.append("contains " + s)
    if "gap" in case:
        lines.append("gap " + case["gap"])
    lines.append("end")
    with open(os.path.join(outdir, name + ".plan"), "w") as f:
        f.write("\n".join(lines) + "\n")


# Whether the expected values come from TensorFlow (--tf) rather than the
# NumPy interpreter, the source each case got, and the cases TF failed.
USE_TF = False
SOURCE = {}
BAD = []


def main():
    global USE_TF
    args = sys.argv[1:]
    if not args:
        sys.exit("usage: reference.py OUTDIR [--tf] [--seed N] [CASE...]")
    outdir, args = args[0], args[1:]
    if args[:1] == ["--tf"]:
        USE_TF, args = True, args[1:]
    seed = int.from_bytes(os.urandom(4), "little")
    if args[:1] == ["--seed"]:
        seed, args = int(args[1]), args[2:]
    only = args
    with open(os.path.join(HERE, "models.json")) as f:
        cases = json.load(f)["cases"]
    unknown = set(only) - {c["name"] for c in cases}
    if unknown:
        sys.exit("reference: no case %s in models.json" % ", ".join(sorted(unknown)))
    os.makedirs(outdir, exist_ok=True)
    print("reference: seed %d" % seed)
    for case in cases:
        if only and case["name"] not in only:
            continue
        rng = np.random.default_rng([seed, sum(case["name"].encode())])
        plan_case(case, outdir, rng)
    with open(os.path.join(outdir, "ORDER"), "w") as f:
        f.write("\n".join(c["name"] for c in cases if not only or c["name"] in only) + "\n")
    by = {}
    for name, src in SOURCE.items():
        by.setdefault(src, []).append(name)
    print("reference: values from " + ", ".join(
        "%s for %d" % (src, len(v)) + ("" if src == "TF" else " (%s)" % " ".join(v))
        for src, v in sorted(by.items(), reverse=True)))
    if BAD:
        sys.exit("reference: %d case(s) expect values TF does not give: %s" % (len(BAD), " ".join(BAD)))


if __name__ == "__main__":
    main()
