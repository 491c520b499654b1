# Evaluates kerneltest cases with real TensorFlow: the oracle of
# tforacle.go. Reads a JSON list of cases, each a binary GraphDef
# (base64), feeds (placeholder name -> TensorProto, base64) and fetch names;
# writes, per case, TF's outputs as TensorProtos or TF's error: the code
# (OpError.error_code at run time; INVALID_ARGUMENT at import, where
# tf.import_graph_def turns TF's InvalidArgument status into ValueError),
# the stage and the message.
#
# Thousands of cases pay TF's start-up once: they are imported in chunks,
# each case under its own name scope, into one graph and session per
# chunk, and the cases expected to succeed run in one Session.run per
# chunk; on any failure, and for the cases expected to fail, each case runs
# alone, so one case's error never touches another's answer.
#
# Usage: python tfeval.py IN.json OUT.jsonl   (OUT: one [index, answer] a
# line, written as answered)
import base64
import json
import os
import re
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import tensorflow as tf  # noqa: E402
from tensorflow.core.framework import tensor_pb2  # noqa: E402

CODE_INVALID_ARGUMENT = 3


def message(e):
    """TF's message without the Python-side preamble ("Graph execution
    error: Detected at node ... defined at ...") that hides the cause."""
    lines = [l for l in e.message.splitlines() if l.strip()]
    keep = [l for l in lines if not l.startswith(("Graph execution error", "Detected at node", "Node: "))
            and "defined at (most recent call last)" not in l]
    return " ".join(keep)[:400]


def b64proto(cls, s):
    p = cls()
    p.ParseFromString(base64.b64decode(s))
    return p


CHUNK = 64


def scoped(gd, p):
    """gd with every node name and input prefixed by p."""
    for n in gd.node:
        n.name = p + n.name
        n.input[:] = ["^" + p + x[1:] if x.startswith("^") else p + x for x in n.input]
    return gd


def import_cases(g, cases, idx, res):
    """Imports cases idx into g, case i under the scope "c<i>/"; returns
    those that TF accepted. All at once first (one import is far cheaper
    than many); one by one when that fails, so each gets its own error."""
    gds = {i: b64proto(tf.compat.v1.GraphDef, cases[i]["graph"]) for i in idx}
    with g.as_default():
        merged = tf.compat.v1.GraphDef()
        for i in idx:
            merged.versions.CopyFrom(gds[i].versions)
            merged.node.extend(scoped(gds[i], "c%d/" % i).node)
        try:
            if len({gds[i].versions.producer for i in idx}) == 1:
                tf.import_graph_def(merged, name="")
                return list(idx)
        except (ValueError, tf.errors.OpError):
            pass
        ok = []
        for i in idx:
            try:
                tf.import_graph_def(gds[i], name="")
            except ValueError as e:
                res[i] = {"code": CODE_INVALID_ARGUMENT, "stage": "import", "msg": str(e)[:400]}
                continue
            except tf.errors.OpError as e:
                res[i] = {"code": e.error_code, "stage": "import", "msg": message(e)}
                continue
            ok.append(i)
    return ok


def feeds_fetches(g, c, i):
    p = "c%d/" % i
    feeds = {}
    for name, s in c["feeds"] or []:
        feeds[g.get_tensor_by_name(p + name + ":0")] = tf.make_ndarray(b64proto(tensor_pb2.TensorProto, s))
    fetches = [g.get_tensor_by_name(p + f) for f in c["fetches"] or []]
    # The node itself runs as a target too: a node without outputs (an
    # Assert) still runs and may fail.
    return feeds, fetches + [g.get_operation_by_name(p + c["node"])]


def answer(fetches, outs):
    enc = []
    for t, v in zip(fetches[:-1], outs):
        proto = tf.make_tensor_proto(v, dtype=t.dtype)
        enc.append(base64.b64encode(proto.SerializeToString()).decode())
    return {"code": 0, "outputs": enc}


def run_chunk(cases, idx, res, cfg, opts):
    """Runs a few cases in one graph and session: first all of them in one
    Session.run (one executor to build), and one by one only when that
    fails, so that each failing case gets its own error."""
    # TF aborts the process on some hostile inputs (a CHECK in a kernel):
    # the last line on stderr then names the chunk at fault.
    print("tfeval: chunk of cases %s" % list(idx), file=sys.stderr, flush=True)
    g = tf.Graph()
    ok = import_cases(g, cases, idx, res)
    if not ok:
        return
    with tf.compat.v1.Session(graph=g, config=cfg) as sess:
        ff = {i: feeds_fetches(g, cases[i], i) for i in ok}
        feeds, fetches = {}, []
        for i in ok:
            feeds.update(ff[i][0])
            fetches.append(ff[i][1])
        outs = None
        if all(not cases[i].get("err") for i in ok):
            try:
                outs = sess.run(fetches, feeds, options=opts)
            except tf.errors.OpError:
                pass
        for k, i in enumerate(ok):
            if outs is not None:
                res[i] = answer(ff[i][1], outs[k])
                continue
            print("tfeval: case %d" % i, file=sys.stderr, flush=True)
            try:
                res[i] = answer(ff[i][1], sess.run(ff[i][1], ff[i][0], options=opts))
            except tf.errors.OpError as e:
                if re.search(r"\bc(?!%d/)\d+/" % i, e.message):
                    # TF places the session's whole graph: a node of another
                    # case without a kernel fails every run. Run it alone.
                    run_alone(cases, i, res, cfg, opts)
                else:
                    res[i] = {"code": e.error_code, "stage": "run", "msg": message(e)}


def run_alone(cases, i, res, cfg, opts):
    g = tf.Graph()
    if not import_cases(g, cases, [i], res):
        return
    with tf.compat.v1.Session(graph=g, config=cfg) as sess:
        feeds, fetches = feeds_fetches(g, cases[i], i)
        try:
            res[i] = answer(fetches, sess.run(fetches, feeds, options=opts))
        except tf.errors.OpError as e:
            res[i] = {"code": e.error_code, "stage": "run", "msg": message(e)}


class Answers(dict):
    """Answers by case index, each also written at once as a JSON line of
    OUT, so that what was answered survives TF aborting the process."""

    def __init__(self, f):
        super().__init__()
        self.f = f

    def __setitem__(self, i, v):
        super().__setitem__(i, v)
        self.f.write(json.dumps([i, v]) + "\n")
        self.f.flush()


def main(src, dst):
    cases = json.load(open(src))
    res = Answers(open(dst, "w"))
    # TF's kernels are the oracle, not its graph optimizers: grappler and
    # constant folding are off, which also saves most of a run's set-up.
    cfg = tf.compat.v1.ConfigProto(intra_op_parallelism_threads=1, inter_op_parallelism_threads=1)
    cfg.graph_options.rewrite_options.disable_meta_optimizer = True
    cfg.graph_options.optimizer_options.opt_level = tf.compat.v1.OptimizerOptions.L0
    # A case that hangs fails with DEADLINE_EXCEEDED instead of stalling
    # the suite.
    opts = tf.compat.v1.RunOptions(timeout_in_ms=60000)
    # Cases expected to fail go in chunks of their own, so that the chunks
    # of the others usually run in one Session.run.
    for err in (False, True):
        idx = [i for i, c in enumerate(cases) if bool(c.get("err")) == err]
        for lo in range(0, len(idx), CHUNK):
            run_chunk(cases, idx[lo:lo + CHUNK], res, cfg, opts)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
