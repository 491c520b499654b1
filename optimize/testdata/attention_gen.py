"""Writes the Keras MultiHeadAttention GraphDef of optimize's attention_test.go.

Run with the project's venv (TensorFlow 2.15.1), from the repository root:

    build/venv/bin/python optimize/testdata/attention_gen.py

One frozen Keras MultiHeadAttention (2 heads of depth 4, self-attention over
x [batch, 5, 8], no mask, weights drawn at random) between a Placeholder "x"
and an Identity "output", as TF 2.15 exports it: EinsumDense projections,
the query scaled by a Mul, Einsum "aecd,abcd->acbe", Softmax, the dropout's
Identity, Einsum "acbe,aecd->abcd" and the output projection.
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from google.protobuf import text_format  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench", "cpu"))
import models  # noqa: E402  (frozen: the benchmark's freezing of a Keras model)


def main():
    tf.keras.utils.set_random_seed(6)
    x = tf.keras.Input((5, 8), name="x")
    mha = tf.keras.layers.MultiHeadAttention(num_heads=2, key_dim=4)
    m = tf.keras.Model(x, mha(x, x))
    rng = np.random.default_rng(6)
    mha.set_weights([rng.uniform(-1, 1, w.shape).astype(np.float32) for w in mha.get_weights()])
    gd = models.frozen(m, [tf.TensorSpec((None, 5, 8), tf.float32, name="x")])
    out = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(out, "attention_keras.pbtxt"), "w") as f:
        f.write(text_format.MessageToString(gd))


if __name__ == "__main__":
    main()
