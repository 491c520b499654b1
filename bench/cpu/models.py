"""Writes the CPU benchmark's TF-built GraphDefs (binary) and ConfigProtos.

Run with the project's venv (TensorFlow 2.15.1):

    build/venv/bin/python bench/cpu/models.py OUTDIR

Models, each with Placeholders as inputs (-1 = batch) and a node "output":
  keras_mlp      Keras Dense 512-1024-1024-512-256-1, ReLU, Sigmoid, frozen
  keras_cnn      Keras 3 x (Conv3x3 + BatchNorm + ReLU + MaxPool) 32/64/128
                 channels on [B,32,32,3], then Dense 10, frozen (inference mode)
  keras_encoder  one Keras transformer encoder block on [B,64,128]: 4-head
                 MultiHeadAttention, LayerNormalization, FFN 512 with GELU, frozen
  chain          x (scalar) then 1000 chained AddV2(prev, Const 1); output the last
  wide           1000 independent AddV2(x, Const i), "output" a NoOp that has
                 them all as control inputs (run as a target)
  while1000      x (scalar) then a tf.compat.v1.while_loop (control flow v1:
                 Enter/Merge/Switch/NextIteration/Exit) of 1000 iterations of
                 y + 1; the per-iteration cost of the executor's frames

ConfigProtos: cfg.pb (intra_op = inter_op = 2, TF's default optimizations)
and cfg_noopt.pb (the same with TF's graph optimizations off: opt_level L0,
no constant folding, the meta-optimizer disabled).
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from tensorflow.python.framework.convert_to_constants import (  # noqa: E402
    convert_variables_to_constants_v2,
)


def frozen(model, input_specs):
    """Freezes a Keras model into a GraphDef whose inputs are Placeholders
    named after input_specs and whose output is the node 'output'."""

    @tf.function(input_signature=input_specs)
    def serve(*xs):
        y = model(*xs, training=False)
        return tf.identity(y, name="output")

    cf = convert_variables_to_constants_v2(serve.get_concrete_function())
    gd = cf.graph.as_graph_def()
    # The concrete function's outputs go through Identity nodes; make the
    # benchmark's fetch name exist whatever TF named them.
    names = {n.name for n in gd.node}
    if "output" not in names:
        out = cf.outputs[0].name.split(":")[0]
        node = gd.node.add()
        node.name = "output"
        node.op = "Identity"
        node.input.append(out)
        node.attr["T"].type = tf.float32.as_datatype_enum
    return gd


def keras_mlp():
    tf.keras.utils.set_random_seed(1)
    x = tf.keras.Input((512,), name="dense_in")
    h = x
    for w in (1024, 1024, 512, 256):
        h = tf.keras.layers.Dense(w, activation="relu")(h)
    y = tf.keras.layers.Dense(1, activation="sigmoid")(h)
    return frozen(tf.keras.Model(x, y), [tf.TensorSpec([None, 512], tf.float32, name="dense")])


def keras_cnn():
    tf.keras.utils.set_random_seed(2)
    x = tf.keras.Input((32, 32, 3), name="image")
    h = x
    for c in (32, 64, 128):
        h = tf.keras.layers.Conv2D(c, 3, padding="same", use_bias=False)(h)
        h = tf.keras.layers.BatchNormalization()(h)
        h = tf.keras.layers.ReLU()(h)
        h = tf.keras.layers.MaxPooling2D()(h)
    h = tf.keras.layers.Flatten()(h)
    y = tf.keras.layers.Dense(10)(h)
    m = tf.keras.Model(x, y)
    # Non-trivial BatchNorm statistics, as a trained model has.
    for layer in m.layers:
        if isinstance(layer, tf.keras.layers.BatchNormalization):
            n = layer.moving_mean.shape[0]
            rng = np.random.default_rng(n)
            layer.moving_mean.assign(rng.normal(0, 0.1, n).astype(np.float32))
            layer.moving_variance.assign(rng.uniform(0.5, 1.5, n).astype(np.float32))
    return frozen(m, [tf.TensorSpec([None, 32, 32, 3], tf.float32, name="image")])


def keras_encoder():
    tf.keras.utils.set_random_seed(3)
    x = tf.keras.Input((64, 128), name="tokens")
    a = tf.keras.layers.MultiHeadAttention(num_heads=4, key_dim=32)(x, x)
    h = tf.keras.layers.LayerNormalization()(x + a)
    f = tf.keras.layers.Dense(512, activation="gelu")(h)
    f = tf.keras.layers.Dense(128)(f)
    y = tf.keras.layers.LayerNormalization()(h + f)
    return frozen(tf.keras.Model(x, y), [tf.TensorSpec([None, 64, 128], tf.float32, name="tokens")])


def scalar_graph(kind, n=1000):
    g = tf.Graph()
    with g.as_default():
        x = tf.compat.v1.placeholder(tf.float32, [], name="x")
        if kind == "chain":
            y = x
            for i in range(n):
                y = tf.raw_ops.AddV2(x=y, y=tf.constant(1.0, name=f"c{i}"), name=f"add{i}")
            tf.identity(y, name="output")
        else:
            adds = [tf.raw_ops.AddV2(x=x, y=tf.constant(float(i), name=f"c{i}"), name=f"add{i}") for i in range(n)]
            tf.group(*adds, name="output")
    return g.as_graph_def()


def while_graph(n=1000):
    g = tf.Graph()
    with g.as_default():
        tf.compat.v1.disable_control_flow_v2()
        x = tf.compat.v1.placeholder(tf.float32, [], name="x")
        _, y = tf.compat.v1.while_loop(lambda i, y: i < n, lambda i, y: (i + 1, y + 1.0),
                                       [tf.constant(0), x], name="while")
        tf.identity(y, name="output")
    return g.as_graph_def()


def configs(out):
    cfg = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=2, inter_op_parallelism_threads=2)
    with open(os.path.join(out, "cfg.pb"), "wb") as f:
        f.write(cfg.SerializeToString())
    cfg.graph_options.optimizer_options.opt_level = tf.compat.v1.OptimizerOptions.L0
    cfg.graph_options.optimizer_options.do_constant_folding = False
    cfg.graph_options.rewrite_options.disable_meta_optimizer = True
    with open(os.path.join(out, "cfg_noopt.pb"), "wb") as f:
        f.write(cfg.SerializeToString())


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    configs(out)
    for name, make in (
        ("keras_mlp", keras_mlp),
        ("keras_cnn", keras_cnn),
        ("keras_encoder", keras_encoder),
        ("chain", lambda: scalar_graph("chain")),
        ("wide", lambda: scalar_graph("wide")),
        ("while1000", while_graph),
    ):
        gd = make()
        with open(os.path.join(out, name + ".pb"), "wb") as f:
            f.write(gd.SerializeToString())
        print(f"{name}: {len(gd.node)} nodes", file=sys.stderr)


if __name__ == "__main__":
    main()
