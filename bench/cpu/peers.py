"""The CPU benchmark's Python clients and conversions: the GraphDefs of
bench/cpu/vs_tf.sh converted for ONNX Runtime and OpenVINO, and each library's
Python client (mstream's own, TensorFlow's, ONNX Runtime's, OpenVINO's) on
them. Runs in build/peers-venv (bench/cpu/peers_setup.sh).

    python bench/cpu/peers.py convert MODELDIR PEERDIR MODEL...
    python bench/cpu/peers.py run SIDE PEERDIR MODEL BATCHES THREADS DUR

convert writes, per model, MODEL.spec.json (the Placeholders in the order
TF_GraphNextOperation gives them, which is the order loadgen.c feeds them, and
the fetches), MODEL.onnx (tf2onnx, opset 17; see to_onnx for the large
constants) and MODEL.xml/.bin (OpenVINO's TensorFlow frontend, weights kept
f32); a model is converted again only when its GraphDef changes. A model
whose conversion fails gets MODEL.SIDE.err instead (SIDE ort or ov), and both
that library's clients, C (bench/cpu/loadgen_ort.c, loadgen_ov.c) and Python,
report it as failed.

run measures one Python client (mspy, tfpy, ortpy or ovpy) as
bench/gpu/closedloop.h measures the C ones: T threads each send requests back
to back for DUR seconds after a warm-up, on feeds drawn with closedloop.h's
generator from the same seeds (so the outputs are comparable byte for byte
with the C clients' OUTPUT_DUMP), and prints one JSON line per (batch,
threads) point in their format. Thread settings are the C clients': INTRA
(vs_tf.sh passes the ConfigProto's intra_op_parallelism_threads, 2).
mstream (python/mstream, ctypes over build/libmstream.so) and TF read cfg.pb
themselves; ORT gets intra_op_num_threads = INTRA, inter_op_num_threads = 1
and sequential execution (and, for a *_noopt model, graph_optimization_level
= ORT_DISABLE_ALL, as the ConfigProto turns TF's optimizer off); OpenVINO
gets INFERENCE_NUM_THREADS = INTRA, the LATENCY hint (one stream, which the
requests of all client threads share, as TF's pools are shared) and
INFERENCE_PRECISION_HINT = f32 (its default on an AVX-512 or AMX CPU is bf16,
which moves outputs by up to 1%), compiled for each batch size with static
shapes (OpenVINO's fast path; it has no switch for its graph optimizations,
so *_noopt runs with them). Graphs whose "output" is a NoOp (wide) fetch its
1000 AddV2 outputs instead on ORT and OpenVINO, which have no targets.
"""
import hashlib
import json
import os
import sys
import threading
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402

MASK = (1 << 32) - 1
LCG_A, LCG_C = 1664525, 1013904223


def lcg(seed, n):
    """n draws of closedloop.h's cl_rng from seed: (values, next seed).

    s_k = A^k s_0 + C (1 + A + ... + A^(k-1)) mod 2^32, computed in uint64
    (wrapping mod 2^64 keeps every residue mod 2^32)."""
    if n == 0:
        return np.zeros(0, np.uint32), seed
    with np.errstate(over="ignore"):
        pw = np.cumprod(np.full(n, LCG_A, np.uint64))  # A^1 .. A^n
        geo = np.cumsum(np.concatenate(([np.uint64(1)], pw[:-1])))  # 1 + .. + A^(k-1)
        s = (pw * np.uint64(seed) + geo * np.uint64(LCG_C)) & np.uint64(MASK)
    return (s >> np.uint64(8)).astype(np.uint32), int(s[-1])


def feeds(spec, batch, client):
    """The feeds closedloop.h's client `client` sends at this batch size."""
    seed = (12345 + client * 7919 + batch) & MASK
    ids_max = int(os.environ.get("IDS_MAX", "100000"))
    out = []
    for inp in spec["inputs"]:
        shape = [batch if d < 0 else d for d in inp["shape"]]
        r, seed = lcg(seed, int(np.prod(shape, dtype=np.int64)))
        if inp["dtype"] == "float32":
            v = ((r % 2000).astype(np.float32) / np.float32(1000.0) - np.float32(1.0))
        else:
            v = (r % ids_max).astype(inp["dtype"])
        out.append(v.reshape(shape))
    return out


def base(model):
    return model[: -len("_noopt")] if model.endswith("_noopt") else model


# --- convert -----------------------------------------------------------------


BIG_CONST_MB = 1  # MiB; see to_onnx
INTRA = int(os.environ.get("INTRA", "2"))


def convert(modeldir, peerdir, models):
    import tensorflow as tf

    os.makedirs(peerdir, exist_ok=True)
    for model in dict.fromkeys(base(m) for m in models):
        pb = os.path.join(modeldir, model + ".pb")
        data = open(pb, "rb").read()
        digest = hashlib.sha256(data).hexdigest()[:16]
        stem = os.path.join(peerdir, model)
        if open_text(stem + ".done") == digest:
            continue
        for f in os.listdir(peerdir):
            if f.startswith(model + "."):
                os.remove(os.path.join(peerdir, f))
        gd = tf.compat.v1.GraphDef.FromString(data)
        g = tf.Graph()
        with g.as_default():
            tf.import_graph_def(gd, name="")
        ins = [op for op in g.get_operations() if op.type == "Placeholder"]
        out = g.get_operation_by_name("output")
        target = len(out.outputs) == 0
        # A NoOp has no value to return: the peers fetch what it groups.
        fetch = [op.name + ":0" for op in out.control_inputs] if target else ["output:0"]
        spec = {
            "inputs": [
                {"name": op.name, "dtype": op.outputs[0].dtype.name, "shape": [-1 if d is None else d for d in op.outputs[0].shape.as_list()]}
                for op in ins
            ],
            "fetch": fetch,
            "target": target,
        }
        with open(stem + ".spec.json", "w") as f:
            json.dump(spec, f)
        t0 = time.time()
        try:
            to_onnx(gd, [i["name"] + ":0" for i in spec["inputs"]], fetch, stem + ".onnx")
            print(f"peers: {model}: ONNX in {time.time() - t0:.1f} s", file=sys.stderr)
        except Exception as e:  # noqa: BLE001 - any converter failure is reported, not fatal
            write(stem + ".ort.err", f"tf2onnx: {type(e).__name__}: {str(e)[:300]}")
            print(f"peers: {model}: tf2onnx failed: {e!s:.300}", file=sys.stderr)
        t0 = time.time()
        try:
            import openvino as ov

            try:
                m = ov.convert_model(pb, output=fetch)
            except Exception:  # noqa: BLE001
                # The Keras exports end in "output" -> Identity; the frontend
                # folds the Identity and keeps only its name. The graph's one
                # output is then "output"'s value.
                m = ov.convert_model(pb)
                if target or len(m.outputs) != 1:
                    raise
            ov.save_model(m, stem + ".xml", compress_to_fp16=False)
            print(f"peers: {model}: OpenVINO IR in {time.time() - t0:.1f} s", file=sys.stderr)
        except Exception as e:  # noqa: BLE001
            write(stem + ".ov.err", f"openvino: {type(e).__name__}: {str(e)[:300]}")
            print(f"peers: {model}: OpenVINO failed: {e!s:.300}", file=sys.stderr)
        write(stem + ".done", digest)


def to_onnx(gd, inputs, outputs, path):
    """tf2onnx's conversion of gd, opset 17, written to path.

    Constants above BIG_CONST_MB go round the converter: they become
    Placeholders of their dtype and shape for tf2onnx, and the ONNX model
    gets their values as initializers of those inputs afterwards. Given
    dlrm_small's 26 tables of 100000 x 64 f32 (667 MB) as constants,
    tf2onnx 1.17 grew past 8 GB in two minutes (stopped there; a run
    before took all 23 GB of this machine and was killed); round it, the
    conversion took 31 s. The model is the same: an initializer that is
    not a graph input is a constant to ORT and its optimizer."""
    import onnx
    import tensorflow as tf
    import tf2onnx
    from onnx import numpy_helper

    small = tf.compat.v1.GraphDef()
    small.CopyFrom(gd)
    big = {}
    for n in small.node:
        if n.op == "Const" and n.ByteSize() > BIG_CONST_MB << 20:
            t = n.attr["value"].tensor
            big[n.name + ":0"] = tf.make_ndarray(t)
            dtype, shape = t.dtype, tf.TensorShape(t.tensor_shape).as_proto()
            n.op = "Placeholder"
            n.ClearField("attr")
            n.attr["dtype"].type = dtype
            n.attr["shape"].shape.CopyFrom(shape)
    proto, _ = tf2onnx.convert.from_graph_def(small, input_names=inputs + list(big), output_names=outputs, opset=17)
    if big:
        kept = [i for i in proto.graph.input if i.name not in big]
        del proto.graph.input[:]
        proto.graph.input.extend(kept)
        proto.graph.initializer.extend(numpy_helper.from_array(v, k) for k, v in big.items())
    onnx.save(proto, path)


def open_text(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return None


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


# --- sides -------------------------------------------------------------------
# Each side's make(spec, batch) returns run(feeds) -> first output (ndarray) or
# None; one per client thread where the library wants that (OpenVINO's infer
# requests), shared otherwise (a TF session and an ORT session are thread-safe).


class MSPy:
    """mstream's own Python client (python/mstream: ctypes over
    build/libmstream.so, the library the C client links)."""

    def __init__(self, model, peerdir, modeldir):
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        sys.path.insert(0, os.path.join(root, "python"))
        import mstream

        cfgname = "cfg_noopt.pb" if model.endswith("_noopt") else "cfg.pb"
        self.g = mstream.Graph.from_file(os.path.join(modeldir, base(model) + ".pb"))
        self.sess = mstream.Session(self.g, config=open(os.path.join(modeldir, cfgname), "rb").read())
        self.spec = json.load(open(os.path.join(peerdir, base(model) + ".spec.json")))
        self.names = [i["name"] for i in self.spec["inputs"]]

    def make(self, batch):
        sess, names = self.sess, self.names
        if self.spec["target"]:

            def run(xs):
                sess.run([], dict(zip(names, xs)), targets=["output"])

            return run
        return lambda xs: sess.run("output", dict(zip(names, xs)))


class TFPy:
    def __init__(self, model, peerdir, modeldir):
        import tensorflow as tf

        gd = tf.compat.v1.GraphDef.FromString(open(os.path.join(modeldir, base(model) + ".pb"), "rb").read())
        cfgname = "cfg_noopt.pb" if model.endswith("_noopt") else "cfg.pb"
        cfg = tf.compat.v1.ConfigProto.FromString(open(os.path.join(modeldir, cfgname), "rb").read())
        self.g = tf.Graph()
        with self.g.as_default():
            tf.import_graph_def(gd, name="")
        self.sess = tf.compat.v1.Session(graph=self.g, config=cfg)
        self.spec = json.load(open(os.path.join(peerdir, base(model) + ".spec.json")))
        feeds = [self.g.get_tensor_by_name(i["name"] + ":0") for i in self.spec["inputs"]]
        fetch = self.g.get_operation_by_name("output") if self.spec["target"] else self.g.get_tensor_by_name("output:0")
        self.call = self.sess.make_callable(fetch, feed_list=feeds)

    def make(self, batch):
        call = self.call
        return lambda xs: call(*xs)


class ORT:
    def __init__(self, model, peerdir, modeldir):
        import onnxruntime as ort

        stem = os.path.join(peerdir, base(model))
        err = open_text(stem + ".ort.err")
        if err:
            raise RuntimeError(err)
        o = ort.SessionOptions()
        o.intra_op_num_threads = INTRA
        o.inter_op_num_threads = 1
        o.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        if model.endswith("_noopt"):
            o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        self.sess = ort.InferenceSession(stem + ".onnx", o, providers=["CPUExecutionProvider"])
        self.names = [i.name for i in self.sess.get_inputs()]
        self.spec = json.load(open(stem + ".spec.json"))
        # tf2onnx names inputs after the tensors ("x:0"); keep the spec's order.
        order = {n: k for k, n in enumerate(self.names)}
        self.idx = [order[i["name"] + ":0"] if i["name"] + ":0" in order else order[i["name"]] for i in self.spec["inputs"]]
        self.outs = [o.name for o in self.sess.get_outputs()]

    def make(self, batch):
        sess, names, idx, outs = self.sess, self.names, self.idx, self.outs

        def run(xs):
            return sess.run(outs, {names[j]: x for j, x in zip(idx, xs)})[0]

        return run


class OV:
    def __init__(self, model, peerdir, modeldir):
        import openvino as ov

        stem = os.path.join(peerdir, base(model))
        err = open_text(stem + ".ov.err")
        if err:
            raise RuntimeError(err)
        self.ov = ov
        self.core = ov.Core()
        self.xml = stem + ".xml"
        self.spec = json.load(open(stem + ".spec.json"))
        self.compiled = {}
        self.lock = threading.Lock()

    def make(self, batch):
        ov = self.ov
        with self.lock:
            if batch not in self.compiled:
                m = self.core.read_model(self.xml)
                shapes = {}
                for p in m.inputs:
                    s = [batch if d < 0 else d for d in self.spec["inputs"][self._index(p)]["shape"]]
                    shapes[p] = ov.PartialShape(s)
                m.reshape(shapes)
                cfg = {"INFERENCE_NUM_THREADS": INTRA, "PERFORMANCE_HINT": "LATENCY", "INFERENCE_PRECISION_HINT": "f32"}
                self.compiled[batch] = self.core.compile_model(m, "CPU", cfg)
            cm = self.compiled[batch]
        req = cm.create_infer_request()
        order = [self._index(p) for p in cm.inputs]

        def run(xs):
            req.infer([xs[k] for k in order], share_inputs=True)
            return req.get_output_tensor(0).data

        return run

    def _index(self, port):
        names = [i["name"] for i in self.spec["inputs"]]
        for n in port.get_names():
            n = n.split(":")[0]
            if n in names:
                return names.index(n)
        raise RuntimeError(f"OpenVINO input {port.get_names()} is none of {names}")


SIDES = {"mspy": MSPy, "tfpy": TFPy, "ortpy": ORT, "ovpy": OV}


def measure(side, spec, batches, threads, dur, dump):
    warm = float(os.environ.get("WARM_S", "0"))  # closedloop.h's: more warm-up at the first point
    for bi, batch in enumerate(batches):
        maxT = max(threads)
        xs = [feeds(spec, batch, i) for i in range(maxT)]
        runs = [side.make(batch) for _ in range(maxT)]
        for ti, T in enumerate(threads):
            lat = [[] for _ in range(T)]
            stop = [float("inf")]
            failed = []
            bar = threading.Barrier(T + 1)

            def client(i):
                try:
                    for w in range(5):
                        y = runs[i](xs[i])
                        if w == 0 and i == 0 and ti == 0 and dump and y is not None:
                            np.ascontiguousarray(y).tofile(f"{dump}.{batch}")
                    while bi == 0 and ti == 0 and time.perf_counter() < warm_until:
                        runs[i](xs[i])
                except Exception as e:  # noqa: BLE001 - reported as this point's failure
                    failed.append(e)
                bar.wait()
                if failed:
                    return
                mine = lat[i]
                try:
                    while True:
                        t0 = time.perf_counter()
                        if t0 >= stop[0]:
                            break
                        runs[i](xs[i])
                        mine.append(time.perf_counter() - t0)
                except Exception as e:  # noqa: BLE001
                    failed.append(e)

            warm_until = time.perf_counter() + warm
            th = [threading.Thread(target=client, args=(i,)) for i in range(T)]
            for t in th:
                t.start()
            bar.wait()
            t0, cpu0 = time.perf_counter(), time.process_time()
            stop[0] = t0 + dur
            for t in th:
                t.join()
            wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
            if failed:
                raise failed[0]
            allv = sorted(v for l in lat for v in l)
            n = len(allv)
            print(json.dumps({
                "batch": batch, "threads": T, "qps": round(n / wall, 1), "samples_per_s": round(n * batch / wall, 1),
                "p50_ms": round(allv[n // 2] * 1e3, 4) if n else 0, "p99_ms": round(allv[int(0.99 * (n - 1))] * 1e3, 4) if n else 0,
                "requests": n, "cpu_us_per_request": round(cpu * 1e6 / n, 1) if n else 0,
            }), flush=True)


def main():
    if sys.argv[1] == "convert":
        convert(sys.argv[2], sys.argv[3], sys.argv[4:])
        return
    _, _, side, peerdir, model, batches, threads, dur = sys.argv
    modeldir = os.path.join(os.path.dirname(os.path.abspath(peerdir)), "models")
    modeldir = os.environ.get("MODELDIR", modeldir)
    try:
        s = SIDES[side](model, peerdir, modeldir)
    except Exception as e:  # noqa: BLE001
        print(f"peers: {model} on {side}: {type(e).__name__}: {e!s:.400}", file=sys.stderr)
        sys.exit(1)
    measure(s, s.spec, [int(b) for b in batches.split(",")], [int(t) for t in threads.split(",")], float(dur), os.environ.get("OUTPUT_DUMP"))


if __name__ == "__main__":
    main()
