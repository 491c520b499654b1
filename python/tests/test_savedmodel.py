"""SavedModels written by TF 2.15 (tf.compat.v1.saved_model.Builder,
tf.saved_model.save, Keras's model.export; test/savedmodel/gen.py) and TF's
own SavedModel test data loaded with mstream.load: each signature's outputs
equal TF's (test/savedmodel/cases.json)."""

import json
import os
import sys
import unittest

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from util import mstream  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.normpath(os.path.join(HERE, "..", "..", "test", "savedmodel"))


def array(t):
    """A cases.json tensor as NumPy: strings as bytes, as the client gives them."""
    if t["dtype"] == "string":
        # Latin-1 text in cases.json: one character per byte.
        return np.array([v.encode("latin-1") for v in t["values"]], dtype=object).reshape(t["shape"])
    return np.array(t["values"], dtype=t["dtype"]).reshape(t["shape"])


class SavedModelTest(unittest.TestCase):
    def test_signatures_match_tf(self):
        with open(os.path.join(MODELS, "cases.json")) as f:
            cases = json.load(f)["cases"]
        self.assertTrue(cases)
        for c in cases:
            with self.subTest(c["name"] + "/" + c["signature"]):
                with mstream.load(os.path.join(MODELS, c["name"]), tags=c["tags"]) as m:
                    # As TF's loader shows them: a TF2 model's init op is not one.
                    self.assertNotIn("__saved_model_init_op", m.signatures)
                    if not c["signature"]:
                        continue  # a model without signatures (TF's test data): it loads
                    sig = m.signatures[c["signature"]]
                    self.assertEqual(sig.inputs, {t["name"]: t["tensor"] for t in c["inputs"]})
                    self.assertEqual(sig.outputs, {t["name"]: t["tensor"] for t in c["outputs"]})
                    got = sig(**{t["name"]: array(t) for t in c["inputs"]})
                    for t in c["outputs"]:
                        want = array(t)
                        if want.dtype == np.float32:
                            # 1e-5 on the CPU; a GPU's TF32 GEMMs agree to ~1e-3.
                            np.testing.assert_allclose(got[t["name"]], want, rtol=2e-3, atol=2e-3, err_msg=t["name"])
                        else:
                            np.testing.assert_array_equal(got[t["name"]], want, err_msg=t["name"])
                    with self.assertRaises(TypeError):
                        sig(no_such_input=1)

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
