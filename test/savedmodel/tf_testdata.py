"""Runs every SavedModel of TF 2.15's own test data
(tensorflow/cc/saved_model/testdata in the TF 2.15.0 Go module) through TF's
C API, as TF_LoadSessionFromSavedModel loads it, for gen.py.

Usage: MSTREAM_LIB=<TF's libtensorflow_cc.so.2> python tf_testdata.py SRC OUT.json
(gen.py runs it in a process of its own: the Python client of python/mstream
then drives TF's own library.)

For each directory under SRC with a saved_model.pb, .pbtxt or .cpb, and each
tag set its MetaGraphDefs have (the "serve" set when the file cannot be read
here), the model is loaded; when TF loads it, each signature runs, in sorted
order on the one session, on random inputs of the dtype and shape its
SignatureDef gives (an unknown dimension is 3); otherwise its error code and
message are kept. Signatures that parse tf.Examples (classify, regress) are fed
serialized Examples with a float feature x. A model with no signature is a
case with signature "" (it must load). OUT.json: {"loaded": [case...],
"failed": [{"name", "tags", ["signature",] "code", "message"}]}, cases in
cases.json's form, strings as Latin-1 text.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))
import mstream  # noqa: E402
from tensorflow.core.protobuf import saved_model_pb2  # noqa: E402
from google.protobuf import text_format  # noqa: E402

rng = np.random.default_rng()
DTYPES = {1: np.float32, 2: np.float64, 3: np.int32, 9: np.int64, 10: np.bool_, 7: object}


def tag_sets(path):
    sm = saved_model_pb2.SavedModel()
    try:
        if os.path.exists(os.path.join(path, "saved_model.pb")):
            with open(os.path.join(path, "saved_model.pb"), "rb") as f:
                sm.ParseFromString(f.read())
        elif os.path.exists(os.path.join(path, "saved_model.pbtxt")):
            with open(os.path.join(path, "saved_model.pbtxt")) as f:
                text_format.Parse(f.read(), sm)
        else:
            return [["serve"]], None
    except Exception:  # noqa: BLE001 -- a corrupt file: TF's loader says why
        return [["serve"]], None
    return [sorted(m.meta_info_def.tags) for m in sm.meta_graphs], sm


def examples(n):
    """n serialized tf.Examples with a float feature x, what the
    classify and regress signatures of half_plus_two parse."""
    from tensorflow.core.example import example_pb2
    out = []
    for _ in range(n):
        e = example_pb2.Example()
        e.features.feature["x"].float_list.value.append(float(rng.standard_normal()))
        out.append(e.SerializeToString())
    return np.array(out, dtype=object)


def value(info, method):
    dt = DTYPES.get(info.dtype)
    if dt is object and method in ("tensorflow/serving/classify", "tensorflow/serving/regress"):
        return examples(3)
    if dt is None:
        return None
    shape = [3 if d.size < 0 else d.size for d in info.tensor_shape.dim]
    if info.tensor_shape.unknown_rank:
        shape = [3]
    if dt is object:
        return np.array(["s%d" % rng.integers(100) for _ in range(int(np.prod(shape)))], dtype=object).reshape(shape)
    if dt is np.bool_:
        return rng.integers(0, 2, shape).astype(np.bool_)
    if np.issubdtype(dt, np.integer):
        return rng.integers(-5, 6, shape).astype(dt)
    return rng.standard_normal(shape).astype(dt)


def tensor_json(key, name, a):
    a = np.asarray(a)
    if a.dtype.kind in "OSU":
        # Latin-1 keeps any bytes (a serialized Example) as text.
        dtype, vals = "string", [v.decode("latin-1") if isinstance(v, bytes) else str(v) for v in a.ravel()]
    elif a.dtype == np.bool_:
        dtype, vals = "bool", a.ravel().tolist()
    else:
        dtype, vals = a.dtype.name, a.ravel().tolist()
    return {"name": key, "tensor": name, "dtype": dtype, "shape": list(a.shape), "values": vals}


def main():
    src, out = sys.argv[1], sys.argv[2]
    loaded, failed = [], []
    for root, _, files in sorted(os.walk(src)):
        if not any(f in files for f in ("saved_model.pb", "saved_model.pbtxt", "saved_model.cpb")):
            continue
        name = os.path.relpath(root, src)
        sets, sm = tag_sets(root)
        for tags in sets:
            try:
                m = mstream.load(root, tags=tags)
            except mstream.TFError as e:
                failed.append({"name": name, "tags": tags, "code": int(e.code), "message": e.message})
                continue
            with m:
                if not m.signatures:
                    loaded.append({"name": name, "tags": tags, "signature": "", "inputs": [], "outputs": []})
                mg = next(g for g in sm.meta_graphs if sorted(g.meta_info_def.tags) == tags) if sm else None
                for key in sorted(m.signatures):
                    sig = m.signatures[key]
                    infos = mg.signature_def[key]
                    feeds = {k: value(infos.inputs[k], infos.method_name) for k in sorted(sig.inputs)}
                    if any(v is None for v in feeds.values()):
                        continue
                    try:
                        got = sig(**feeds)
                    except mstream.TFError as e:
                        failed.append({"name": name, "tags": tags, "signature": key, "code": int(e.code), "message": e.message,
                                       "inputs": [tensor_json(k, sig.inputs[k], v) for k, v in feeds.items()]})
                        continue
                    loaded.append({"name": name, "tags": tags, "signature": key,
                                   "inputs": [tensor_json(k, sig.inputs[k], v) for k, v in feeds.items()],
                                   "outputs": [tensor_json(k, sig.outputs[k], got[k]) for k in sorted(got)]})
    with open(out, "w") as f:
        json.dump({"loaded": loaded, "failed": failed}, f)


if __name__ == "__main__":
    main()
