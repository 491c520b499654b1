"""SavedModels written by TF 2.15's tf.compat.v1.saved_model.Builder
(test/savedmodel/gen.py) loaded with mstream.load: the serving signature's
outputs equal TF's (test/savedmodel/cases.json)."""

import json
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from util import mstream  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.normpath(os.path.join(HERE, "..", "..", "test", "savedmodel"))


class SavedModelTest(unittest.TestCase):
    def test_signatures_match_tf(self):
        with open(os.path.join(MODELS, "cases.json")) as f:
            cases = json.load(f)["cases"]
        self.assertTrue(cases)
        for c in cases:
            with self.subTest(c["name"]):
                with mstream.load(os.path.join(MODELS, c["name"]), tags=c["tags"]) as m:
                    # As TF's loader shows them: a TF2 model's init op is not one.
                    self.assertNotIn("__saved_model_init_op", m.signatures)
                    sig = m.signatures["serving_default"]
                    self.assertEqual(sig.inputs, {"x": c["input"]["tensor"]})
                    self.assertEqual(sig.outputs, {"y": c["output"]["tensor"]})
                    x = np.array(c["input"]["values"], np.float32).reshape(c["input"]["shape"])
                    y = sig(x=x)["y"]
                    want = np.array(c["output"]["values"], np.float32).reshape(c["output"]["shape"])
                    # 1e-5 on the CPU; a GPU's TF32 GEMMs agree to ~1e-3.
                    np.testing.assert_allclose(y, want, rtol=2e-3, atol=2e-3)
                    with self.assertRaises(TypeError):
                        sig(z=x)

    def test_errors(self):
        with self.assertRaises(mstream.TFError) as e:
            mstream.load(os.path.join(MODELS, "no_such_model"))
        self.assertEqual(e.exception.code, mstream.Code.NOT_FOUND)
        self.assertIn("no_such_model", e.exception.message)
        with self.assertRaises(mstream.TFError) as e:
            mstream.load(os.path.join(MODELS, "mlp_resource"), tags=["serve"])
        self.assertEqual(e.exception.code, mstream.Code.NOT_FOUND)
        self.assertIn("{ gpu serve }", e.exception.message)


if __name__ == "__main__":
    unittest.main()
