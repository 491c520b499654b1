"""Writes a TF2 SavedModel (tf.saved_model.save of a tf.Module) for gen.py:
the same two-layer MLP as mlp_resource over tf.Variables, its
serving_default signature a StatefulPartitionedCall into the function
library, as every TF2 SavedModel's is.

Usage: python tf2_module.py DIR  (gen.py runs it; eager, unlike gen.py)
"""
import sys

import numpy as np
import tensorflow as tf


class MLP(tf.Module):
    def __init__(self, rng):
        super().__init__()
        self.w1 = tf.Variable(rng.standard_normal((4, 8)).astype(np.float32), name="w1")
        self.b1 = tf.Variable(rng.standard_normal(8).astype(np.float32), name="b1")
        self.w2 = tf.Variable(rng.standard_normal((8, 3)).astype(np.float32), name="w2")

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x")])
    def serve(self, x):
        h = tf.nn.relu(tf.matmul(x, self.w1) + self.b1)
        return {"y": tf.nn.softmax(tf.matmul(h, self.w2))}


def main():
    m = MLP(np.random.default_rng())
    tf.saved_model.save(m, sys.argv[1], signatures={"serving_default": m.serve})


if __name__ == "__main__":
    main()
