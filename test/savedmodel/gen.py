"""Writes SavedModels with TF 2.15 (tf.compat.v1.saved_model.Builder,
tf.saved_model.save, Keras's model.export) and TF's outputs for them.

Usage: build/venv/bin/python test/savedmodel/gen.py  (from the repo root)

mlp_ref: a two-layer MLP over ref variables (VariableV2), tag "serve",
saved as saved_model.pb. mlp_resource: the same over resource variables,
tags {"serve", "gpu"}, saved as saved_model.pbtxt, with a legacy init op that
sets a counter variable and an asset file whose path the init op stores.
mlp_tf2: the same MLP as a TF2 tf.Module written by tf.saved_model.save
(tf2_module.py, run in a process of its own: it needs eager execution),
whose signature calls the function library (StatefulPartitionedCall).
TF loads each model back (tf.compat.v1.saved_model.loader.load), runs its
serving_default signature on random inputs and writes inputs and outputs to
cases.json (and <name>.txt for C). keras_models.py (its own process, eager)
writes the Keras models of issue 14 (a CNN with BatchNormalization, a text
model with StringLookup and Hashing, a wide-and-deep recommender, an LSTM)
and a tf.Module with variables and lookup tables; TF's loader runs each of
their signatures on the inputs that script chose, and cases.json holds
every input and output by signature key, with its dtype (strings as
Latin-1 text). TF's own SavedModel test data (every model under
tensorflow/cc/saved_model/testdata in the TF 2.15.0 Go module) runs
through TF's C API (tf_testdata.py); the models TF loads are copied
unchanged into tf/ with their cases, and those it cannot load or run go to
cases.json's tf_failed with TF's error. savedmodel's Go test,
test/c/savedmodel.c and the Python package's test load the same
directories through mstream and compare.
"""
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng()


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def build(name, resource, tags, as_text):
    path = os.path.join(here, name)
    shutil.rmtree(path, ignore_errors=True)
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
        w1 = tf.compat.v1.get_variable("w1", initializer=f32(4, 8), use_resource=resource)
        b1 = tf.compat.v1.get_variable("b1", initializer=f32(8), use_resource=resource)
        w2 = tf.compat.v1.get_variable("w2", initializer=f32(8, 3), use_resource=resource)
        h = tf.nn.relu(tf.matmul(x, w1) + b1)
        y = tf.nn.softmax(tf.matmul(h, w2), name="y")
        extra = {}
        if resource:
            count = tf.compat.v1.get_variable("count", initializer=0.0, use_resource=True, trainable=False)
            vocab = os.path.join(here, "vocab.txt")
            with open(vocab, "w") as f:
                f.write("a\nb\n")
            asset = tf.constant(vocab, name="asset_path")
            tf.compat.v1.add_to_collection(tf.compat.v1.GraphKeys.ASSET_FILEPATHS, asset)
            seen = tf.compat.v1.get_variable("seen", initializer="", use_resource=True, trainable=False)
            init = tf.group(count.assign(42.0), seen.assign(asset), name="legacy_init")
            extra = {"legacy_init_op": init, "assets_collection": tf.compat.v1.get_collection(tf.compat.v1.GraphKeys.ASSET_FILEPATHS)}
            tf.identity(count.read_value(), name="count_out")
            tf.identity(seen.read_value(), name="seen_out")
        with tf.compat.v1.Session(graph=g) as s:
            s.run(tf.compat.v1.global_variables_initializer())
            b = tf.compat.v1.saved_model.Builder(path)
            sig = tf.compat.v1.saved_model.predict_signature_def({"x": x}, {"y": y})
            b.add_meta_graph_and_variables(s, tags, signature_def_map={"serving_default": sig}, **extra)
            b.save(as_text=as_text)
        if resource:
            os.remove(vocab)
    return expect(name, tags, f32(5, 4), resource)


def tensor_json(key, name, a):
    """A feed or fetch as cases.json holds it: strings as UTF-8 text."""
    a = np.asarray(a)
    if a.dtype.kind in "OSU":
        # Latin-1 keeps any bytes (a serialized Example) as text.
        dtype, vals = "string", [v.decode("latin-1") if isinstance(v, bytes) else str(v) for v in a.ravel()]
    elif a.dtype == np.bool_:
        dtype, vals = "bool", a.ravel().tolist()
    else:
        dtype, vals = a.dtype.name, a.ravel().tolist()
    return {"name": key, "tensor": name, "dtype": dtype, "shape": list(a.shape), "values": vals}


def run_signature(s, mg, name, tags, key, feeds):
    """Runs signature key of the loaded MetaGraphDef mg with feeds ({input
    key: array}) and returns its case: every input and output, by key."""
    sig = mg.signature_def[key]
    okeys = sorted(sig.outputs)
    ikeys = sorted(feeds)
    got = s.run([sig.outputs[k].name for k in okeys], {sig.inputs[k].name: feeds[k] for k in ikeys})
    return {"name": name, "tags": tags, "signature": key,
            "inputs": [tensor_json(k, sig.inputs[k].name, feeds[k]) for k in ikeys],
            "outputs": [tensor_json(k, sig.outputs[k].name, v) for k, v in zip(okeys, got)]}


def expect(name, tags, inputs, extra=False):
    """Loads the model at here/name with TF, runs serving_default (x -> y)
    on inputs and returns the case for cases.json, writing here/name.txt."""
    path = os.path.join(here, name)
    g = tf.Graph()
    with tf.compat.v1.Session(graph=g) as s:
        mg = tf.compat.v1.saved_model.loader.load(s, tags, path)
        case = run_signature(s, mg, name, tags, "serving_default", {"x": inputs})
        out = np.asarray(case["outputs"][0]["values"], np.float32).reshape(case["outputs"][0]["shape"])
        # The same as plain numbers for test/c/savedmodel_test.c: the
        # input's rows and columns and values, then the output's.
        with open(path + ".txt", "w") as f:
            for a in (inputs, out):
                f.write("%d %d\n%s\n" % (a.shape[0], a.shape[1], " ".join(repr(float(v)) for v in a.ravel())))
        if extra:
            case["count"] = float(s.run("count_out:0"))
            case["seen_suffix"] = os.path.basename(s.run("seen_out:0").decode())
        return case


def keras():
    """Writes the Keras and tf.Module models of keras_models.py (in a
    process of its own: it needs eager execution) and returns a case per
    signature of each, run by TF's loader on the inputs the script chose."""
    spec = os.path.join(here, "keras_inputs.json")
    for name in KERAS:
        shutil.rmtree(os.path.join(here, name), ignore_errors=True)
    subprocess.run([sys.executable, os.path.join(here, "keras_models.py"), here, spec] + KERAS, check=True)
    with open(spec) as f:
        inputs = json.load(f)
    os.remove(spec)
    cases = []
    for name in KERAS:
        g = tf.Graph()
        with tf.compat.v1.Session(graph=g) as s:
            mg = tf.compat.v1.saved_model.loader.load(s, ["serve"], os.path.join(here, name))
            for key, feeds in sorted(inputs[name].items()):
                arrays = {k: np.array(v["values"], dtype=object if v["dtype"] == "string" else v["dtype"]).reshape(v["shape"])
                          for k, v in feeds.items()}
                cases.append(run_signature(s, mg, name, ["serve"], key, arrays))
    return cases


KERAS = ["cnn_bn", "text", "wide_deep", "lstm", "module_table"]


def tf2(name):
    """Writes here/name with tf2_module.py and returns its case."""
    path = os.path.join(here, name)
    shutil.rmtree(path, ignore_errors=True)
    subprocess.run([sys.executable, os.path.join(here, "tf2_module.py"), path], check=True)
    return expect(name, ["serve"], f32(5, 4))


def tf_testdata():
    """Runs every SavedModel of TF's own test data (tensorflow/cc/
    saved_model/testdata in the TF 2.15.0 Go module) through TF's C API
    (tf_testdata.py, in a process of its own with the Python client on TF's
    libtensorflow_cc), copies those TF loads into here/tf unchanged and
    returns (their cases, named tf/<dir>; the models TF cannot load or run,
    with TF's error). The half_plus_two models' serving_default also goes
    to tf/<dir>.txt for test/c/savedmodel_test.c."""
    cache = subprocess.run(["go", "env", "GOMODCACHE"], capture_output=True, text=True, check=True).stdout.strip()
    src = os.path.join(cache, TF_MODULE, TESTDATA)
    lib = os.path.join(os.path.dirname(tf.__file__), "libtensorflow_cc.so.2")
    spec = os.path.join(here, "tf_testdata.json")
    env = dict(os.environ, MSTREAM_LIB=lib, TF_CPP_MIN_LOG_LEVEL="3")
    subprocess.run([sys.executable, os.path.join(here, "tf_testdata.py"), src, spec], check=True, env=env)
    with open(spec) as f:
        got = json.load(f)
    os.remove(spec)
    shutil.rmtree(os.path.join(here, "tf"), ignore_errors=True)
    for name in sorted({c["name"] for c in got["loaded"]}):
        dst = os.path.join(here, "tf", name)
        shutil.copytree(os.path.join(src, name), dst)
        for root, _, files in os.walk(dst):
            for f in files:
                os.chmod(os.path.join(root, f), 0o644)
            os.chmod(root, 0o755)
    for c in got["loaded"]:
        c["name"] = "tf/" + c["name"]
        if c["name"].startswith("tf/half_plus_two") and c["signature"] == "serving_default":
            with open(os.path.join(here, c["name"] + ".txt"), "w") as f:
                for t in (c["inputs"][0], c["outputs"][0]):
                    f.write("%d %d\n%s\n" % (t["shape"][0], t["shape"][1], " ".join(repr(float(v)) for v in t["values"])))
    return got["loaded"], got["failed"]


def checkpoints(names):
    """What TF's checkpoint reader finds in each model's variables/
    bundle: {model: [tensor...]} (the object graph left out), for the
    bundles TF wrote snappy-compressed among them."""
    out = {}
    for name in names:
        prefix = os.path.join(here, name, "variables", "variables")
        if not os.path.exists(prefix + ".index"):
            continue
        r = tf.train.load_checkpoint(prefix)
        out[name] = [tensor_json(k, k, r.get_tensor(k)) for k in sorted(r.get_variable_to_dtype_map())
                     if k != "_CHECKPOINTABLE_OBJECT_GRAPH"]
    return out


TF_MODULE = "github.com/tensorflow/tensorflow@v2.15.0+incompatible"
TESTDATA = "tensorflow/cc/saved_model/testdata"


def main():
    tf_cases, tf_failed = tf_testdata()
    cases = [
        build("mlp_ref", False, ["serve"], False),
        build("mlp_resource", True, ["serve", "gpu"], True),
        tf2("mlp_tf2"),
    ] + keras() + tf_cases
    with open(os.path.join(here, "cases.json"), "w") as f:
        json.dump({"cases": cases, "tf_failed": tf_failed, "tf_testdata": os.path.join(TF_MODULE, TESTDATA),
                   "checkpoints": checkpoints(sorted({c["name"] for c in cases}))}, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
