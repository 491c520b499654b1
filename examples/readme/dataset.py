import mstream

# examples/data/pipeline.pbtxt: TF 2.15 wrote it from
#   tf.data.Dataset.range(10).map(lambda x: x * x).batch(4), a one-shot iterator.
with mstream.Graph.from_file("examples/data/pipeline.pbtxt") as g, mstream.Session(g) as s:
    batches = []
    while True:
        try:
            (b,) = s.run(["next"])
        except mstream.TFError as e:
            assert e.code == mstream.Code.OUT_OF_RANGE  # "End of sequence"
            break
        batches.append(b.tolist())
print(batches)  # [[0, 1, 4, 9], [16, 25, 36, 49], [64, 81]]
