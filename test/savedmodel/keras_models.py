"""Writes the Keras and tf.Module SavedModels of issue 14 for gen.py, each
tiny (a few hundred parameters) so that generating them stays quick:

  cnn_bn        Conv2D + BatchNormalization (moving statistics not 0/1) +
                pooling + Dense, written by model.export.
  text          a word through StringLookup over a vocabulary file (an
                asset) and a category through Hashing (StringToHashBucketFast)
                and salted Hashing (StringToHashBucketStrong), embedded and
                concatenated; tf.saved_model.save.
  wide_deep     a recommender: the wide part one-hot item buckets (int64
                Hashing), the deep part IntegerLookup'd user embeddings and
                dense features through two Dense layers; model.export.
  lstm          Keras LSTM (a While loop over TensorLists) + Dense;
                tf.saved_model.save.
  module_table  a tf.Module with variables, a StaticHashTable, a
                MutableHashTable of scalars and one of vectors
                (MutableHashTableOfTensorsV2) whose contents the checkpoint
                holds; two signatures.

Usage: python keras_models.py DIR INPUTS.json  (gen.py runs it; eager,
unlike gen.py). Writes DIR/<name> for each model and, in INPUTS.json, the
inputs gen.py feeds each model's signatures: {name: {signature: {key:
{"dtype", "shape", "values"}}}}.
"""
import json
import os
import sys

import numpy as np
import tensorflow as tf

rng = np.random.default_rng()
keras = tf.keras
layers = keras.layers


def randomize(model):
    """Gives every weight random values (BatchNormalization's variances
    positive) so that no output depends on an initializer's zeros or ones."""
    for w in model.weights:
        v = rng.standard_normal(w.shape).astype(w.dtype.as_numpy_dtype) * 0.5
        if "variance" in w.name:
            v = np.abs(v) + 0.5
        w.assign(v)


def feed(values, dtype):
    a = np.asarray(values)
    vals = a.ravel().tolist()
    return {"dtype": dtype, "shape": list(a.shape), "values": vals}


def cnn_bn(path):
    inp = keras.Input((6, 6, 3), name="image")
    x = layers.Conv2D(4, 3, padding="same")(inp)
    x = layers.BatchNormalization()(x)
    x = layers.ReLU()(x)
    x = layers.MaxPooling2D()(x)
    x = layers.Flatten()(x)
    out = layers.Dense(3, activation="softmax")(x)
    m = keras.Model(inp, out)
    randomize(m)
    m.export(path)
    return {"serving_default": {"image": feed(rng.standard_normal((4, 6, 6, 3)).astype(np.float32), "float32")}}


WORDS = ["the", "cat", "sat", "on", "a", "mat"]


def text(path):
    vocab = os.path.join(os.path.dirname(path), "text_vocab.txt")
    with open(vocab, "w") as f:
        f.write("\n".join(WORDS[:5]) + "\n")
    word = keras.Input((), dtype=tf.string, name="word")
    cat = keras.Input((), dtype=tf.string, name="category")
    lookup = layers.StringLookup(vocabulary=vocab)
    e1 = layers.Embedding(lookup.vocabulary_size(), 3)(lookup(word))
    e2 = layers.Embedding(7, 3)(layers.Hashing(num_bins=7)(cat))
    e3 = layers.Embedding(5, 2)(layers.Hashing(num_bins=5, salt=[7, 11])(cat))
    x = layers.Concatenate()([e1, e2, e3])
    out = layers.Dense(2)(x)
    m = keras.Model({"word": word, "category": cat}, out)
    randomize(m)
    tf.saved_model.save(m, path)
    os.remove(vocab)
    cats = ["red", "green", "blue", "", "cyan", "magenta", "x" * 40]
    return {"serving_default": {
        "word": feed(rng.choice(WORDS + ["dog", ""], 8).astype(object).tolist(), "string"),
        "category": feed(rng.choice(cats, 8).astype(object).tolist(), "string")}}


def wide_deep(path):
    user = keras.Input((), dtype=tf.int64, name="user_id")
    item = keras.Input((), dtype=tf.int64, name="item_id")
    dense = keras.Input((3,), name="dense")
    buckets = layers.Hashing(num_bins=11)(item)
    wide = layers.Dense(1)(layers.CategoryEncoding(11, output_mode="one_hot")(buckets))
    users = layers.IntegerLookup(vocabulary=[3, 5, 8, 13, 21])(user)
    u = layers.Embedding(6, 4)(users)
    i = layers.Embedding(11, 4)(buckets)
    h = layers.Concatenate()([u, i, dense])
    h = layers.Dense(8, activation="relu")(h)
    deep = layers.Dense(1)(h)
    out = layers.Activation("sigmoid")(layers.Add()([wide, deep]))
    m = keras.Model({"user_id": user, "item_id": item, "dense": dense}, out)
    randomize(m)
    m.export(path)
    return {"serving_default": {
        "user_id": feed(rng.choice([3, 5, 8, 13, 21, 4, 100], 6).astype(np.int64), "int64"),
        "item_id": feed(rng.integers(-50, 1000, 6).astype(np.int64), "int64"),
        "dense": feed(rng.standard_normal((6, 3)).astype(np.float32), "float32")}}


def lstm(path):
    inp = keras.Input((5, 3), name="seq")
    x = layers.LSTM(4)(inp)
    out = layers.Dense(2)(x)
    m = keras.Model(inp, out)
    randomize(m)
    tf.saved_model.save(m, path)
    return {"serving_default": {"seq": feed(rng.standard_normal((3, 5, 3)).astype(np.float32), "float32")}}


class TableModule(tf.Module):
    def __init__(self):
        super().__init__()
        keys = tf.constant(["apple", "pear", "plum", "fig"])
        self.ids = tf.lookup.StaticHashTable(
            tf.lookup.KeyValueTensorInitializer(keys, tf.constant([0, 1, 2, 3], tf.int64)), default_value=-1)
        self.scores = tf.Variable(rng.standard_normal(4).astype(np.float32), name="scores")
        self.scale = tf.Variable(rng.standard_normal((2,)).astype(np.float32), name="scale")
        self.bonus = tf.lookup.experimental.MutableHashTable(tf.string, tf.float32, default_value=-0.5)
        self.bonus.insert(tf.constant(["pear", "kiwi"]), tf.constant(rng.standard_normal(2).astype(np.float32)))
        self.vecs = tf.lookup.experimental.MutableHashTable(tf.string, tf.float32, default_value=[0.25, -0.25])
        self.vecs.insert(tf.constant(["apple", "kiwi", "plum"]), tf.constant(rng.standard_normal((3, 2)).astype(np.float32)))

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="fruit")])
    def serve(self, fruit):
        ids = self.ids.lookup(fruit)
        score = tf.gather(self.scores, tf.maximum(ids, 0)) * tf.cast(ids >= 0, tf.float32)
        vec = self.vecs.lookup(fruit) * self.scale
        return {"id": ids, "score": score + self.bonus.lookup(fruit), "vec": vec}

    @tf.function(input_signature=[])
    def sizes(self):
        return {"ids": self.ids.size(), "bonus": self.bonus.size(), "vecs": self.vecs.size()}


def module_table(path):
    m = TableModule()
    tf.saved_model.save(m, path, signatures={"serving_default": m.serve, "sizes": m.sizes})
    fruit = rng.choice(["apple", "pear", "plum", "fig", "kiwi", "lime"], 7).astype(object).tolist()
    return {"serving_default": {"fruit": feed(fruit, "string")}, "sizes": {}}


MODELS = {"cnn_bn": cnn_bn, "text": text, "wide_deep": wide_deep, "lstm": lstm, "module_table": module_table}


def main():
    out, inputs = sys.argv[1], {}
    for name in sys.argv[3:] or MODELS:
        inputs[name] = MODELS[name](os.path.join(out, name))
    with open(sys.argv[2], "w") as f:
        json.dump(inputs, f)


if __name__ == "__main__":
    main()
