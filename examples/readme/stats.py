"""The README's MS_SessionStats example: a session with
TF_GPU_STREAM_GROUP_COUNT=2 (set before the session is made, as a user sets
it), three runs of the bundled model, then the stats as JSON on stdout.
examples/readme/check_readme.py checks that every field of the README's
abridged JSON is in this output, with the same type, and that the runs,
groups and knob it shows are what this session reports."""
import json
import os

import numpy as np
import mstream

os.environ["TF_GPU_STREAM_GROUP_COUNT"] = "2"
with mstream.Graph.from_file("examples/data/model_test.pbtxt") as g, mstream.Session(g) as s:
    feeds = {"dense": np.ones((4, 13), np.float32), "ids_0": np.arange(4, dtype=np.int32),
             "ids_1": np.arange(4), "ids_2": np.ones((4, 1), np.int32), "ids_3": np.ones((4, 1), np.int64)}
    for _ in range(3):
        s.run(["output"], feeds)
    print(json.dumps(s.stats()))
