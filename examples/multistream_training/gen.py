"""Writes the multi-stream training example's model with real TF 2.15.

Usage: build/venv/bin/python examples/multistream_training/gen.py  (from the repo root)

examples/data/training.pbtxt is a recommender built with tf.compat.v1 in graph
mode: TOWERS independent towers, each an embedding (a resource variable read
with ResourceGather) and an MLP, joined at the top by ConcatV2 and a head MLP
whose logit is trained with sigmoid cross-entropy against a 0/1 label. TF's own
gradients and tf.compat.v1.train.AdagradOptimizer make the train op "train":
ResourceSparseApplyAdagrad for the embeddings (their gradients are
IndexedSlices), ResourceApplyAdagrad for the dense weights. A Saver ("save")
writes a SaveV2 checkpoint. Every node of tower t is named under "tower<t>/"
(its gradients under "gradients/tower<t>/", its updates under
"train/update_tower<t>/"), so the stream file examples/data/training_streams.txt
puts one tower per stream group.

Initial values are fed: each variable but the (zero) biases is initialised
from a placeholder <variable>_init_value that the client fills with uniform
[-1, 1) numbers when it runs "init", scaled in the graph (1 for embeddings,
Glorot for kernels). So mstream and TF start from the same numbers, and the
file holds no weights. Feeds: tower<t>/ids (int64 [batch]) and head/label (float32
[batch,1]); fetch "loss:0"; targets "init" and "train"; the checkpoint's path
is fed to "save/Const:0" with target "save/control_dependency".
"""
import os

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()

TOWERS = 4
VOCAB = [1000, 5000, 2000, 500]
EMB = 32
TOWER_MLP = [256, 128, 32]
HEAD_MLP = [64]
LR = 0.1

here = os.path.dirname(os.path.abspath(__file__))
data = os.path.join(here, "..", "data")


def init_value(name, shape, scale):
    """A placeholder the client feeds with uniform [-1, 1) values when it
    runs "init", scaled here: the initial weights come from the client's
    fixed-seed generator, identical for mstream and TF, and the file holds
    no weights."""
    u = tf.compat.v1.placeholder(tf.float32, shape, name=name + "_init_value")
    return u * scale


def glorot(name, shape):
    return init_value(name, shape, float(np.sqrt(6.0 / (shape[0] + shape[1]))))


def dense(x, n_in, n_out, name, relu=True):
    w = tf.compat.v1.get_variable(name + "/kernel", initializer=glorot(name + "/kernel", [n_in, n_out]), use_resource=True)
    b = tf.compat.v1.get_variable(name + "/bias", initializer=tf.zeros([n_out]), use_resource=True)
    y = tf.nn.bias_add(tf.matmul(x, w), b)
    return tf.nn.relu(y) if relu else y


def build():
    outs = []
    for t in range(TOWERS):
        with tf.compat.v1.variable_scope("tower%d" % t):
            ids = tf.compat.v1.placeholder(tf.int64, [None], name="ids")
            emb = tf.compat.v1.get_variable("emb", initializer=init_value("emb", [VOCAB[t], EMB], 1.0), use_resource=True)
            x = tf.nn.embedding_lookup(emb, ids)
            n_in = EMB
            for k, n_out in enumerate(TOWER_MLP):
                x = dense(x, n_in, n_out, "dense%d" % k)
                n_in = n_out
            outs.append(x)
    with tf.compat.v1.variable_scope("head"):
        label = tf.compat.v1.placeholder(tf.float32, [None, 1], name="label")
        x = tf.concat(outs, axis=1)
        n_in = TOWERS * TOWER_MLP[-1]
        for k, n_out in enumerate(HEAD_MLP):
            x = dense(x, n_in, n_out, "dense%d" % k)
            n_in = n_out
        logit = dense(x, n_in, 1, "logit", relu=False)
    loss = tf.reduce_mean(tf.nn.sigmoid_cross_entropy_with_logits(labels=label, logits=logit), name="loss")
    tf.compat.v1.train.AdagradOptimizer(LR).minimize(loss, name="train")
    tf.group(tf.compat.v1.global_variables_initializer(), name="init")
    tf.compat.v1.train.Saver(name="save")


def main():
    g = tf.Graph()
    with g.as_default():
        build()
    gd = g.as_graph_def()
    tf.io.write_graph(gd, data, "training.pbtxt", as_text=True)
    with open(os.path.join(data, "training_streams.txt"), "w") as f:
        for t in range(TOWERS):
            f.write("%d:.*tower%d/.*\n" % (t, t))
    print("wrote examples/data/training.pbtxt (%d nodes) and training_streams.txt" % len(gd.node))


if __name__ == "__main__":
    main()
