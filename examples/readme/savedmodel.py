import numpy as np
import mstream

with mstream.load("test/savedmodel/mlp_ref", tags=["serve"]) as m:
    serve = m.signatures["serving_default"]
    y = serve(x=np.ones((2, 4), np.float32))["y"]
print(sorted(serve.inputs), y.shape, y.dtype)  # ['x'] (2, 3) float32
