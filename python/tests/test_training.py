"""Session.train: TF1 training programs (test/variables: a small MLP with
each tf.compat.v1.train optimizer, embeddings with the sparse ones) trained
through the Python client's training loop, against the losses and final
variables TF 2.15 recorded for the same graph and batches
(test/variables/cases.json, written by test/variables/gen.py)."""

import json
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from util import ROOT, mstream  # noqa: E402

VARS = os.path.join(ROOT, "test", "variables")


def decode(v):
    return np.array(v["values"], dtype=v["dtype"]).reshape(v["shape"])


def cases():
    with open(os.path.join(VARS, "cases.json")) as f:
        return [c for c in json.load(f)["cases"] if c["name"].startswith("train_")]


class TrainingLoop(unittest.TestCase):
    def test_against_tf(self):
        names = []
        for c in cases():
            runs = c["runs"]
            # The recorded sequence: init, then (train fetching the loss,
            # read the variables) per step.
            init, steps = runs[0], runs[1:]
            trains, reads = steps[0::2], steps[1::2]
            self.assertEqual(init["targets"], ["init"], c["name"])
            batches = [{k: decode(v) for k, v in r["feeds"].items()} for r in trains]
            with self.subTest(case=c["name"]):
                with mstream.Graph.from_file(os.path.join(VARS, c["graph"])) as g, mstream.Session(g) as s:
                    curve = s.train("train", batches, fetches=["loss:0"], every=1, init="init")
                    self.assertEqual([k for k, _ in curve], list(range(len(trains))))
                    for (k, (loss,)), r in zip(curve, trains):
                        want = decode(r["want"][0])
                        np.testing.assert_allclose(loss, want, rtol=2e-5, atol=1e-6,
                                                   err_msg="%s step %d loss" % (c["name"], k))
                    last = reads[-1]
                    for name, got, want in zip(last["fetches"], s.run(last["fetches"]), last["want"]):
                        np.testing.assert_allclose(got, decode(want), rtol=1e-4, atol=1e-5,
                                                   err_msg="%s: %s after training" % (c["name"], name))
            names.append(c["name"])
        # The dense optimizers over ref and resource variables, and the
        # sparse ones over an embedding.
        self.assertIn("train_adam_resource", names)
        self.assertIn("train_embedding_ftrl", names)
        self.assertGreaterEqual(len(names), 20)

    def test_every(self):
        c = next(c for c in cases() if c["name"] == "train_sgd_resource")
        trains = c["runs"][1:][0::2]
        batches = [{k: decode(v) for k, v in r["feeds"].items()} for r in trains]
        with mstream.Graph.from_file(os.path.join(VARS, c["graph"])) as g, mstream.Session(g) as s:
            curve = s.train("train", iter(batches), fetches=["loss:0"], every=2, init="init")
        # every 2 steps and the last
        self.assertEqual([k for k, _ in curve], [0, 2, 4])
        for k, (loss,) in curve:
            np.testing.assert_allclose(loss, decode(trains[k]["want"][0]), rtol=2e-5, atol=1e-6)


if __name__ == "__main__":
    unittest.main()
