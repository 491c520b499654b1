import numpy as np
import mstream

with mstream.Graph.from_file("examples/data/model_test.pbtxt") as g, mstream.Session(g) as s:
    ids = {"ids_0": np.arange(4, dtype=np.int32), "ids_1": np.arange(4),  # [B] ids
           "ids_2": np.ones((4, 1), np.int32), "ids_3": np.ones((4, 1), np.int64)}
    (y,) = s.run(["output"], {"dense": np.ones((4, 13), np.float32), **ids})
print(y.shape, y.dtype)  # (4, 1) float32
