"""Writes the LayerNormalization GraphDefs of optimize's layernorm_test.go.

Run with the project's venv (TensorFlow 2.15.1), from the repository root:

    build/venv/bin/python optimize/testdata/layernorm_gen.py

Each is one frozen Keras LayerNormalization (gamma and beta drawn at random,
not Keras' ones and zeros) between a Placeholder "x" and an Identity
"output", as TF 2.15 exports it. With epsilon >= 1.001e-5 Keras takes its
fused path (Reshape to NCHW [1, rows, cols, 1], FusedBatchNormV3 with
is_training, Reshape back, Mul gamma, AddV2 beta); with a smaller epsilon
the moments path (Mean, SquaredDifference, Mean, AddV2 epsilon, Rsqrt, Mul,
Mul, Mul, Sub, AddV2). The text form is kept small: gamma and beta have 8
elements.
"""
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from google.protobuf import text_format  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bench", "cpu"))
import models  # noqa: E402  (frozen: the benchmark's freezing of a Keras model)


def layernorm(shape, seed, **kw):
    tf.keras.utils.set_random_seed(seed)
    x = tf.keras.Input(shape, name="x")
    ln = tf.keras.layers.LayerNormalization(**kw)
    m = tf.keras.Model(x, ln(x))
    rng = np.random.default_rng(seed)
    ln.set_weights([rng.uniform(0.5, 2, w.shape).astype(np.float32) if i == 0 else
                    rng.uniform(-1, 1, w.shape).astype(np.float32) for i, w in enumerate(ln.get_weights())])
    return models.frozen(m, [tf.TensorSpec((None,) + shape, tf.float32, name="x")])


def main():
    out = os.path.dirname(os.path.abspath(__file__))
    cases = {
        "layernorm_fused_rank3": layernorm((4, 8), 1),
        "layernorm_fused_rank2": layernorm((8,), 2),
        "layernorm_moments_rank3": layernorm((4, 8), 3, epsilon=1e-6),
        "layernorm_moments_rank2": layernorm((8,), 4, epsilon=1e-6),
    }
    for name, gd in cases.items():
        with open(os.path.join(out, name + ".pbtxt"), "w") as f:
            f.write(text_format.MessageToString(gd))


if __name__ == "__main__":
    main()
