"""Writes the v1 control-flow test graphs and TF 2.15's outputs for them.

Usage: build/venv/bin/python test/controlflow/gen.py [cases] [lists]  (from the repo root)

Each case is a GraphDef built with tf.compat.v1 in graph mode with control
flow v2 off, so conditionals become Switch/Merge as TF1 made them. TF runs
every feed set and its fetched values (or its error code and message) go
into cases.json beside the GraphDefs (test/controlflow/*.pbtxt); the Go
test session/controlflow_test.go runs the same graphs through mstream and
compares. Inputs are drawn at random each time the script runs.
"""
import json
import os
import sys

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
tf.compat.v1.disable_control_flow_v2()

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng()


def enc(v):
    v = np.asarray(v)
    vals = v.ravel()
    if v.dtype == np.bool_:
        vals = vals.astype(np.int64)
    return {"dtype": str(v.dtype), "shape": list(v.shape), "values": vals.tolist()}


def case(name, build, feed_sets, fetches, shapes=()):
    g = tf.Graph()
    with g.as_default():
        gd = build()
    if gd is not None or any("while" in t for t in shapes):
        # A frozen GraphDef (build returned one), or a loop whose static
        # shapes must be those of TF's C++ importer (as mstream imports),
        # not the ones Python's while_loop sets: run what TF imports.
        gd = gd if gd is not None else g.as_graph_def()
        g = tf.Graph()
        with g.as_default():
            tf.import_graph_def(gd, name="")
    # TF's static shapes of the named outputs: null for an unknown rank,
    # -1 for an unknown dimension.
    static = {}
    for t in shapes:
        sh = g.get_tensor_by_name(t).shape
        static[t] = None if sh.rank is None else [-1 if d is None else d for d in sh.as_list()]
    path = os.path.join(here, name + ".pbtxt")
    tf.io.write_graph(g.as_graph_def(), here, name + ".pbtxt", as_text=True)
    runs = []
    with tf.compat.v1.Session(graph=g) as s:
        for feeds in feed_sets:
            run = {"feeds": {k: enc(v) for k, v in feeds.items()}, "fetches": fetches}
            try:
                out = s.run(fetches, {k + ":0": v for k, v in feeds.items()})
                run["want"] = [enc(o) for o in out]
            except tf.errors.OpError as e:
                # The Python client prefixes "Graph execution error:"; the
                # runtime's own message is the last line.
                run["error"] = {"code": e.error_code, "message": e.message.strip().split("\n")[-1]}
            runs.append(run)
    return {"name": name, "graph": os.path.basename(path), "runs": runs, "shapes": static}


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def nested_cond():
    x = tf.compat.v1.placeholder(tf.float32, [3], name="x")
    y = tf.compat.v1.placeholder(tf.float32, [3], name="y")
    p = tf.compat.v1.placeholder(tf.bool, [], name="p")
    q = tf.compat.v1.placeholder(tf.bool, [], name="q")
    r = tf.compat.v1.cond(
        p,
        lambda: tf.compat.v1.cond(q, lambda: x * y, lambda: x + y, name="inner"),
        lambda: tf.reduce_sum(x - y) * tf.ones([3]),
        name="outer")
    tf.identity(tf.tanh(r), name="out")


def cond_control():
    # A cond whose branches have side nodes tied by control edges, and
    # whose result is used next to a live value.
    x = tf.compat.v1.placeholder(tf.float32, [2, 2], name="x")
    p = tf.compat.v1.placeholder(tf.bool, [], name="p")

    def yes():
        a = tf.matmul(x, x)
        with tf.control_dependencies([a]):
            return tf.identity(x) * 2.0

    def no():
        b = tf.nn.relu(x)
        with tf.control_dependencies([b]):
            return b - 1.0

    r = tf.compat.v1.cond(p, yes, no, name="c")
    tf.add(r, x, name="out")


def switch_merge():
    # Raw Switch/Merge: the untaken output fetched fails; Merge's
    # value_index says which branch ran.
    x = tf.compat.v1.placeholder(tf.float32, [4], name="x")
    p = tf.compat.v1.placeholder(tf.bool, [], name="p")
    f, t = tf.raw_ops.Switch(data=x, pred=p, name="sw")
    a = tf.square(t, name="a")
    b = tf.negative(f, name="b")
    tf.raw_ops.Merge(inputs=[b, a], name="m")
    tf.identity(a, name="dead_when_false")


def merge_shapes():
    a = tf.compat.v1.placeholder(tf.float32, [2, 3], name="a")
    b = tf.compat.v1.placeholder(tf.float32, [2, 4], name="b")
    c = tf.compat.v1.placeholder(tf.float32, [None, 3], name="c")
    d = tf.compat.v1.placeholder(tf.float32, None, name="d")
    e = tf.compat.v1.placeholder(tf.float32, [2], name="e")
    p = tf.compat.v1.placeholder(tf.bool, [], name="p")
    tf.raw_ops.Merge(inputs=[a, b], name="m_ab")
    tf.raw_ops.Merge(inputs=[a, c], name="m_ac")
    tf.raw_ops.Merge(inputs=[a, a], name="m_aa")
    tf.raw_ops.Merge(inputs=[a, d], name="m_ad")
    tf.raw_ops.Merge(inputs=[a, e], name="m_ae")
    tf.raw_ops.Switch(data=c, pred=p, name="sw")


def counter(par):
    def build():
        x = tf.compat.v1.placeholder(tf.float32, [3], name="x")
        n = tf.compat.v1.placeholder(tf.int32, [], name="n")
        i, y = tf.compat.v1.while_loop(
            lambda i, y: i < n,
            lambda i, y: (i + 1, y * 0.9 + tf.cast(i, tf.float32)),
            [tf.constant(0), x], parallel_iterations=par, name="while")
        tf.identity(i, name="i_out")
        tf.identity(y, name="y_out")
    return build


def while_grow():
    # The carried value gains a row every iteration.
    x = tf.compat.v1.placeholder(tf.float32, [1, 2], name="x")
    n = tf.compat.v1.placeholder(tf.int32, [], name="n")
    _, y = tf.compat.v1.while_loop(
        lambda i, y: i < n,
        lambda i, y: (i + 1, tf.concat([y, y[-1:] * 2.0 + 1.0], 0)),
        [tf.constant(0), x],
        shape_invariants=[tf.TensorShape([]), tf.TensorShape([None, 2])], name="while")
    tf.identity(y, name="y_out")


def while_cond():
    # A cond inside the body: odd and even iterations take other branches.
    x = tf.compat.v1.placeholder(tf.float32, [4], name="x")
    n = tf.compat.v1.placeholder(tf.int32, [], name="n")

    def body(i, y):
        y = tf.compat.v1.cond(tf.equal(i % 2, 0), lambda: y * 2.0, lambda: tf.tanh(y) - 0.5)
        return i + 1, y
    _, y = tf.compat.v1.while_loop(lambda i, y: i < n, body, [tf.constant(0), x], name="while")
    tf.identity(y, name="y_out")


def while_nested():
    # An inner loop whose trip count depends on the outer iteration, and
    # an outer value used inside it (a loop constant of the inner frame).
    x = tf.compat.v1.placeholder(tf.float32, [2], name="x")
    n = tf.compat.v1.placeholder(tf.int32, [], name="n")

    def outer(i, acc):
        def inner(j, a):
            return j + 1, a + x * tf.cast(i, tf.float32) + tf.cast(j, tf.float32)
        _, a = tf.compat.v1.while_loop(lambda j, a: j < i + 1, inner, [tf.constant(0), acc], name="inner")
        return i + 1, a
    _, acc = tf.compat.v1.while_loop(lambda i, a: i < n, outer, [tf.constant(0), tf.zeros([2])], name="outer")
    tf.identity(acc, name="acc_out")


def while_in_cond():
    # A loop on a cond branch: on the untaken side its Enters are dead,
    # which kills the loop's Merges, and its Exits reach the cond's Merge
    # dead.
    x = tf.compat.v1.placeholder(tf.float32, [3], name="x")
    p = tf.compat.v1.placeholder(tf.bool, [], name="p")

    def loop():
        return tf.compat.v1.while_loop(lambda i, y: i < 4, lambda i, y: (i + 1, y * 1.5 - 0.25),
                                       [tf.constant(0), x], name="while")[1]
    r = tf.compat.v1.cond(p, loop, lambda: x - 1.0, name="c")
    tf.identity(r, name="y_out")



def lists_ops():
    # Every TensorList op on one list and the lists made from it: the
    # original list must be unchanged by the ops that take it.
    x = tf.compat.v1.placeholder(tf.float32, [4, 3], name="x")
    idx = tf.compat.v1.placeholder(tf.int32, [], name="idx")
    raw = tf.raw_ops
    l = raw.TensorListFromTensor(tensor=x, element_shape=[3], name="from")
    l2 = raw.TensorListSetItem(input_handle=l, index=1, item=x[2] * 2.0, name="set")
    raw.TensorListGetItem(input_handle=l2, index=idx, element_shape=[3], element_dtype=tf.float32, name="get")
    raw.TensorListStack(input_handle=l2, element_shape=[3], element_dtype=tf.float32, name="stack_set")
    raw.TensorListStack(input_handle=l, element_shape=[3], element_dtype=tf.float32, name="stack_orig")
    raw.TensorListLength(input_handle=l2, name="len")
    l3 = raw.TensorListPushBack(input_handle=l2, tensor=x[0] + 1.0, name="push")
    l4, _ = raw.TensorListPopBack(input_handle=l3, element_shape=[3], element_dtype=tf.float32, name="pop")
    raw.TensorListStack(input_handle=l4, element_shape=[-1], element_dtype=tf.float32, name="stack_pop")
    raw.TensorListGather(input_handle=l3, indices=[4, 0, 2], element_shape=[3], element_dtype=tf.float32, name="gather")
    raw.TensorListElementShape(input_handle=l, shape_type=tf.int32, name="eshape")
    r = raw.TensorListReserve(element_shape=[-1], num_elements=3, element_dtype=tf.float32, name="reserve")
    r2 = raw.TensorListSetItem(input_handle=r, index=2, item=x[1], name="set_reserved")
    raw.TensorListStack(input_handle=r2, element_shape=[3], element_dtype=tf.float32, name="stack_reserved")
    raw.TensorListGetItem(input_handle=r2, index=0, element_shape=[-1], element_dtype=tf.float32, name="get_unset")
    sc = raw.TensorListScatterV2(tensor=x[:2], indices=[3, 1], element_shape=[3], num_elements=5, name="scatter")
    raw.TensorListStack(input_handle=sc, element_shape=[3], element_dtype=tf.float32, name="stack_scatter")
    # (Growing the list past a hole is left out: TF 2.15 fills the hole
    # with an empty float tensor, not an unset element, and its Stack then
    # shifts the later rows; mstream leaves the hole unset, read as zeros.)
    se = raw.TensorListScatterIntoExistingList(input_handle=l, tensor=x[:2] * 3.0, indices=[0, 4], name="scatter_into")
    raw.TensorListStack(input_handle=se, element_shape=[3], element_dtype=tf.float32, name="stack_scatter_into")


def lists_while():
    # A v1 while loop carrying a list: one push per iteration, reading the
    # elements of another list; the stack of an empty list when n = 0.
    x = tf.compat.v1.placeholder(tf.float32, [5, 2], name="x")
    n = tf.compat.v1.placeholder(tf.int32, [], name="n")
    raw = tf.raw_ops
    src = raw.TensorListFromTensor(tensor=x, element_shape=[2])
    empty = raw.EmptyTensorList(element_shape=[2], max_num_elements=-1, element_dtype=tf.float32)

    def body(i, acc):
        e = raw.TensorListGetItem(input_handle=src, index=i, element_shape=[2], element_dtype=tf.float32)
        return i + 1, raw.TensorListPushBack(input_handle=acc, tensor=e * tf.cast(i + 1, tf.float32))
    _, acc = tf.compat.v1.while_loop(lambda i, acc: i < n, body, [tf.constant(0), empty], name="while")
    raw.TensorListStack(input_handle=acc, element_shape=[2], element_dtype=tf.float32, name="stacked")
    raw.TensorListLength(input_handle=acc, name="len")


def list_cases():
    ops = ["get:0", "stack_set:0", "stack_orig:0", "len:0", "pop:1", "stack_pop:0", "gather:0", "eshape:0",
           "stack_reserved:0", "get_unset:0", "stack_scatter:0", "stack_scatter_into:0"]
    return [
        case("lists_ops", lists_ops, [{"x": f32(4, 3), "idx": np.int32(k)} for k in (0, 1, 3)], ops),
        case("lists_ops_bad_index", lists_ops, [{"x": f32(4, 3), "idx": np.int32(k)} for k in (4, -1)], ["get:0"]),
        case("lists_while", lists_while, [{"x": f32(5, 2), "n": np.int32(k)} for k in (0, 1, 4)], ["stacked:0", "len:0"]),
    ]


def v1_cases():
    cases = []
    for par in (1, 10):
        cases.append(case("while_counter_par%d" % par, counter(par),
                          [{"x": f32(3), "n": np.int32(k)} for k in (0, 1, 7)],
                          ["i_out:0", "y_out:0", "while/Exit_1:0"], ["while/Merge:0", "while/Merge_1:0", "while/Exit_1:0"]))
    cases.append(case("while_grow", while_grow,
                      [{"x": f32(1, 2), "n": np.int32(k)} for k in (0, 3)],
                      ["y_out:0"], ["while/Merge_1:0", "while/Exit_1:0"]))
    cases.append(case("while_cond", while_cond,
                      [{"x": f32(4), "n": np.int32(k)} for k in (0, 5)],
                      ["y_out:0"]))
    cases.append(case("while_nested", while_nested,
                      [{"x": f32(2), "n": np.int32(k)} for k in (0, 1, 4)],
                      ["acc_out:0"]))
    cases.append(case("while_in_cond", while_in_cond,
                      [{"x": f32(3), "p": np.bool_(b)} for b in (True, False)],
                      ["y_out:0"]))
    cases.append(case("merge_shapes", merge_shapes,
                      [{"a": f32(2, 3), "b": f32(2, 4), "c": f32(5, 3), "d": f32(1), "e": f32(2), "p": np.bool_(True)}],
                      ["m_ab:0", "m_ab:1", "sw:1"],
                      ["m_ab:0", "m_ac:0", "m_aa:0", "m_ad:0", "m_ae:0", "m_ab:1", "sw:0", "sw:1"]))
    bools = [(True, True), (True, False), (False, True), (False, False)]
    cases.append(case("nested_cond", nested_cond,
                      [{"x": f32(3), "y": f32(3), "p": np.bool_(p), "q": np.bool_(q)} for p, q in bools],
                      ["out:0", "outer/Merge:0", "outer/Merge:1"]))
    cases.append(case("cond_control", cond_control,
                      [{"x": f32(2, 2), "p": np.bool_(p)} for p in (True, False)],
                      ["out:0"]))
    cases.append(case("switch_merge", switch_merge,
                      [{"x": f32(4), "p": np.bool_(p)} for p in (True, False)],
                      ["m:0", "m:1"]))
    cases.append(case("switch_merge_dead_fetch", switch_merge,
                      [{"x": f32(4), "p": np.bool_(False)}],
                      ["dead_when_false:0"]))
    cases.append(case("switch_merge_dead_switch_output", switch_merge,
                      [{"x": f32(4), "p": np.bool_(True)}],
                      ["sw:0"]))
    return cases


def write(fname, cases):
    with open(os.path.join(here, fname), "w") as fh:
        json.dump({"about": "written by test/controlflow/gen.py from TF " + tf.__version__ + "; do not edit", "cases": cases}, fh, indent=1)
        fh.write("\n")
    print("wrote %d cases to %s" % (len(cases), fname))


# Arguments pick the files to write (default both): cases (v1 control
# flow, session's TestControlFlowV1), lists (TensorList programs,
# session's TestTensorListsLikeTF).
groups = sys.argv[1:] or ["cases", "lists"]
if "cases" in groups:
    write("cases.json", v1_cases())
if "lists" in groups:
    write("lists.json", list_cases())
