"""Writes TF1 graphs with variables and TF 2.15's results for run sequences.

Usage: build/venv/bin/python test/variables/gen.py  (from the repo root)

Each case is a GraphDef built with tf.compat.v1 in graph mode: ref variables
(VariableV2, Assign, AssignAdd, Scatter*), resource variables (VarHandleOp,
ReadVariableOp, AssignVariableOp, ResourceGather, ResourceScatter*), a Saver
(SaveV2/RestoreV2) over both, and a small MLP. TF runs a sequence of steps
on one session (the state carries from step to step); each step's fetched
values, or its error code and message, go into cases.json beside the graphs.
session/variables_test.go replays the same steps through mstream and
compares. "__TMP__" in a string feed stands for a fresh temporary directory,
"__DIR__" for test/variables. A lookup-table case covers HashTableV2 (from
tensors and from a text file), MutableHashTableV2 and their ops. The train_* cases train a small MLP
(an MSE) five steps with each tf.compat.v1.train optimizer over ref and
resource variables, fetching the loss at every step and the variables after
it (centered_rmsprop: ApplyCenteredRMSProp; ftrl, ftrl_power: ApplyFtrl at
lr_power -0.5 and -0.7; ftrl_v2: ApplyFtrlV2, l2 shrinkage); train_embedding
trains an embedding with sparse Adagrad, train_embedding_{momentum,nesterov,
ftrl,ftrl_v2,rmsprop,centered_rmsprop} with the other sparse optimizers; apply_errors runs the optimizer ops
raw, with their errors.
temporary_vars sums three inputs through a TemporaryVariable as TF1's
accumulate_n did (TemporaryVariable, Assign, AssignAdd,
DestroyTemporaryVariable) and keeps a second one undestroyed, which the
step must drop; tables_of_tensors runs a MutableHashTableOfTensorsV2
(insert, find, export, remove).
Inputs are drawn at random each time the script runs. Names as arguments
regenerate only those cases, keeping the others in cases.json.
"""
import json
import os
import sys
import tempfile

import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
tf.compat.v1.disable_resource_variables()

here = os.path.dirname(os.path.abspath(__file__))
rng = np.random.default_rng()


def enc(v):
    if isinstance(v, np.ndarray) and v.dtype == object:
        return {"dtype": "string", "shape": list(v.shape), "strings": [x.decode() for x in v.ravel()]}
    if isinstance(v, (bytes, str)):
        s = v.decode() if isinstance(v, bytes) else v
        return {"dtype": "string", "shape": [], "strings": [s]}
    v = np.asarray(v)
    vals = v.ravel()
    if v.dtype == np.bool_:
        vals = vals.astype(np.int64)
    return {"dtype": str(v.dtype), "shape": list(v.shape), "values": vals.tolist()}


def message(e):
    # The Python client adds "Graph execution error:" and the node's
    # trace; the runtime's own message is the last line that is not the
    # "[[{{node ...}}]]" tag.
    lines = [l for l in e.message.strip().split("\n") if l.strip() and not l.strip().startswith("[[")]
    return lines[-1].strip()


def case(name, build, steps):
    g = tf.Graph()
    with g.as_default():
        build()
    tf.io.write_graph(g.as_graph_def(), here, name + ".pbtxt", as_text=True)
    tmp = tempfile.mkdtemp()
    runs = []
    with tf.compat.v1.Session(graph=g) as s:
        for feeds, fetches, targets in steps:
            run = {"feeds": {k: enc(v) for k, v in feeds.items()}, "fetches": fetches, "targets": targets}
            fd = {}
            for k, v in feeds.items():
                if isinstance(v, str):
                    v = v.replace("__TMP__", tmp).replace("__DIR__", here)
                fd[k + ":0"] = v
            try:
                out = s.run(fetches + [g.get_operation_by_name(t) for t in targets], fd)
                run["want"] = [enc(o) for o in out[:len(fetches)]]
            except tf.errors.OpError as e:
                run["error"] = {"code": e.error_code, "message": message(e)}
            runs.append(run)
    return {"name": name, "graph": name + ".pbtxt", "runs": runs}


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


def ref_vars():
    v = tf.compat.v1.Variable(f32(4, 3), name="v")
    w = tf.compat.v1.Variable(tf.zeros([2]), name="w")
    x = tf.compat.v1.placeholder(tf.float32, [4, 3], name="x")
    bad = tf.compat.v1.placeholder(tf.float32, [None], name="bad")
    idx = tf.compat.v1.placeholder(tf.int32, [None], name="idx")
    upd = tf.compat.v1.placeholder(tf.float32, [None, 3], name="upd")
    tf.compat.v1.assign(v, x, name="assign")
    tf.compat.v1.assign_add(v, x, name="assign_add")
    tf.compat.v1.assign_sub(v, x, name="assign_sub")
    tf.compat.v1.assign(w, bad, name="assign_bad")
    tf.compat.v1.assign(w, bad, validate_shape=False, name="assign_reshape")
    tf.compat.v1.scatter_update(v, idx, upd, name="scatter_update")
    tf.compat.v1.scatter_add(v, idx, upd, name="scatter_add")
    tf.compat.v1.scatter_sub(v, idx, upd, name="scatter_sub")
    tf.identity(tf.compat.v1.is_variable_initialized(v), name="is_init")
    tf.identity(v, name="read")
    tf.reduce_sum(v * 2.0, name="sum")
    tf.identity(w, name="read_w")


def ref_steps():
    x1, x2 = f32(4, 3), f32(4, 3)
    u = f32(2, 3)
    return [
        ({}, ["is_init:0"], []),
        ({}, ["read:0"], []),
        ({"x": x1}, ["assign_add:0"], []),
        ({}, [], ["v/Assign"]),
        ({}, ["is_init:0", "read:0"], []),
        ({"x": x1}, ["assign:0"], []),
        ({"x": x2}, ["assign_add:0"], []),
        ({"x": x1}, ["assign_sub:0"], []),
        ({}, ["read:0", "sum:0"], []),
        ({"idx": np.array([2, 0], np.int32), "upd": u}, ["scatter_update:0"], []),
        ({"idx": np.array([1, 1], np.int32), "upd": u}, ["scatter_add:0"], []),
        ({"idx": np.array([3, 0], np.int32), "upd": u}, ["scatter_sub:0"], []),
        ({"idx": np.array([4], np.int32), "upd": u[:1]}, ["scatter_add:0"], []),
        ({}, ["read:0"], []),
        ({}, [], ["w/Assign"]),
        ({"bad": f32(3)}, ["assign_bad:0"], []),
        ({"bad": f32(3)}, ["assign_reshape:0"], []),
        ({}, ["read_w:0"], []),
    ]


def resource_vars():
    v = tf.compat.v1.get_variable("v", initializer=f32(5, 2), use_resource=True)
    x = tf.compat.v1.placeholder(tf.float32, [5, 2], name="x")
    bad = tf.compat.v1.placeholder(tf.float32, [None, 2], name="bad")
    idx = tf.compat.v1.placeholder(tf.int32, [None], name="idx")
    nd = tf.compat.v1.placeholder(tf.int32, [None, 2], name="nd")
    upd = tf.compat.v1.placeholder(tf.float32, [None, 2], name="upd")
    tf.identity(v.read_value(), name="value")
    v.assign(x, name="assign")
    v.assign_add(x, name="assign_add")
    v.assign_sub(x, name="assign_sub")
    tf.raw_ops.AssignVariableOp(resource=v.handle, value=bad, validate_shape=True, name="assign_bad")
    tf.identity(tf.gather(v, idx), name="rows")
    tf.identity(tf.raw_ops.ResourceGatherNd(resource=v.handle, indices=nd, dtype=tf.float32), name="rows_nd")
    tf.raw_ops.ResourceScatterUpdate(resource=v.handle, indices=idx, updates=upd, name="scatter_update")
    tf.raw_ops.ResourceScatterAdd(resource=v.handle, indices=idx, updates=upd, name="scatter_add")
    tf.raw_ops.ResourceScatterSub(resource=v.handle, indices=idx, updates=upd, name="scatter_sub")
    tf.identity(tf.raw_ops.VarIsInitializedOp(resource=v.handle), name="is_init")
    tf.raw_ops.DestroyResourceOp(resource=v.handle, name="destroy")
    # Two handles with the same shared_name are one variable.
    h2 = tf.raw_ops.VarHandleOp(dtype=tf.float32, shape=[5, 2], shared_name="v", name="alias")
    tf.identity(tf.raw_ops.ReadVariableOp(resource=h2, dtype=tf.float32), name="read_alias")


def resource_steps():
    x1, x2 = f32(5, 2), f32(5, 2)
    u = f32(3, 2)
    i3 = np.array([4, 0, 4], np.int32)
    return [
        ({}, ["is_init:0"], []),
        ({}, ["value:0"], []),
        ({"x": x1}, [], ["assign_add"]),
        ({}, [], ["v/Assign"]),
        ({}, ["is_init:0", "value:0", "read_alias:0"], []),
        ({"x": x1}, [], ["assign"]),
        ({"x": x2}, [], ["assign_add"]),
        ({"x": x1}, [], ["assign_sub"]),
        ({}, ["value:0"], []),
        ({"idx": np.array([3, 1, 3, 0], np.int32)}, ["rows:0"], []),
        ({"idx": np.array([5], np.int32)}, ["rows:0"], []),
        ({"nd": np.array([[1, 1], [4, 0]], np.int32)}, ["rows_nd:0"], []),
        ({"idx": np.array([2, 0, 1], np.int32), "upd": u}, [], ["scatter_update"]),
        ({"idx": i3, "upd": u}, [], ["scatter_add"]),
        ({"idx": i3, "upd": u}, [], ["scatter_sub"]),
        ({"idx": np.array([7], np.int32), "upd": u[:1]}, [], ["scatter_add"]),
        ({}, ["value:0"], []),
        ({"bad": f32(3, 2)}, [], ["assign_bad"]),
        ({}, [], ["destroy"]),
        ({}, ["is_init:0"], []),
        ({}, ["value:0"], []),
    ]


def saver():
    a = tf.compat.v1.Variable(f32(3, 2), name="a")
    b = tf.compat.v1.get_variable("b", initializer=f32(4), use_resource=True)
    x = tf.compat.v1.placeholder(tf.float32, [3, 2], name="x")
    tf.compat.v1.assign(a, x, name="set_a")
    b.assign(tf.zeros([4]), name="zero_b")
    tf.identity(a, name="read_a")
    tf.identity(b.read_value(), name="read_b")
    tf.compat.v1.global_variables_initializer()
    tf.compat.v1.train.Saver([a, b], name="save")


def saver_steps():
    x = f32(3, 2)
    path = "__TMP__/ckpt"
    return [
        ({}, [], ["init"]),
        ({"x": x}, [], ["set_a"]),
        ({"save/Const": path}, ["save/control_dependency:0"], []),
        ({}, ["read_a:0", "read_b:0"], []),
        ({"x": f32(3, 2)}, [], ["set_a", "zero_b"]),
        ({}, ["read_a:0", "read_b:0"], []),
        ({"save/Const": path}, [], ["save/restore_all"]),
        ({}, ["read_a:0", "read_b:0"], []),
    ]


def mlp():
    x = tf.compat.v1.placeholder(tf.float32, [None, 4], name="x")
    w1 = tf.compat.v1.Variable(f32(4, 8), name="w1")
    b1 = tf.compat.v1.Variable(f32(8), name="b1")
    w2 = tf.compat.v1.get_variable("w2", initializer=f32(8, 3), use_resource=True)
    h = tf.nn.relu(tf.matmul(x, w1) + b1)
    tf.nn.softmax(tf.matmul(h, w2), name="y")
    tf.compat.v1.global_variables_initializer()


def mlp_steps():
    return [({}, [], ["init"])] + [({"x": f32(5, 4)}, ["y:0"], []) for _ in range(2)]


def tables():
    keys = tf.constant(["apple", "pear", "fig"])
    vals = tf.constant([3, 1, 4], tf.int64)
    t = tf.lookup.StaticHashTable(tf.lookup.KeyValueTensorInitializer(keys, vals), -1, name="static")
    q = tf.compat.v1.placeholder(tf.string, [None], name="q")
    tf.identity(t.lookup(q), name="found")
    tf.identity(t.size(), name="size")
    fname = tf.compat.v1.placeholder(tf.string, [], name="vocab")
    v = tf.lookup.StaticHashTable(tf.lookup.TextFileInitializer(
        fname, tf.string, tf.lookup.TextFileIndex.WHOLE_LINE, tf.int64, tf.lookup.TextFileIndex.LINE_NUMBER), -7, name="vocab_table")
    tf.identity(v.lookup(q), name="ids")
    m = tf.lookup.experimental.MutableHashTable(tf.int64, tf.float32, default_value=-1.0, name="mutable")
    mk = tf.compat.v1.placeholder(tf.int64, [None], name="mk")
    mv = tf.compat.v1.placeholder(tf.float32, [None], name="mv")
    m.insert(mk, mv, name="insert")
    tf.identity(m.lookup(mk), name="m_found")
    tf.identity(m.size(), name="m_size")
    tf.identity(m.export()[0], name="m_keys")
    tf.compat.v1.tables_initializer(name="init_tables")


def tables_steps():
    q = np.array([b"fig", b"kiwi", b"apple", b"b"], dtype=object)
    k = np.array([5, -2, 9], np.int64)
    return [
        ({"q": q}, ["found:0"], []),
        ({"vocab": "__DIR__/vocab.txt"}, [], ["init_tables"]),
        ({"q": q}, ["found:0", "size:0", "ids:0"], []),
        ({"mk": k}, ["m_found:0", "m_size:0"], []),
        ({"mk": k, "mv": f32(3)}, [], ["insert/LookupTableInsertV2"]),
        ({"mk": k[:2], "mv": f32(2)}, [], ["insert/LookupTableInsertV2"]),
        ({"mk": np.array([9, 5, 4], np.int64)}, ["m_found:0", "m_size:0"], []),
    ]


def temporary_vars():
    from tensorflow.python.ops import gen_state_ops
    ins = [tf.compat.v1.placeholder(tf.float32, [2, 3], name=n) for n in ("x", "y", "z")]
    var = gen_state_ops.temporary_variable(shape=[0], dtype=tf.float32, var_name="acc", name="acc")
    ref = gen_state_ops.assign(var, tf.zeros_like(ins[0]), validate_shape=False, name="zero")
    ups = [gen_state_ops.assign_add(ref, t, use_locking=True) for t in ins]
    with tf.control_dependencies(ups):
        gen_state_ops.destroy_temporary_variable(ref, var_name="acc", name="sum")
    kept = gen_state_ops.temporary_variable(shape=[2, 3], dtype=tf.float32, name="kept")
    tf.identity(gen_state_ops.assign(kept, ins[0]) * 2.0, name="twice")


def temporary_steps():
    x, y, z = f32(2, 3), f32(2, 3), f32(2, 3)
    return [
        ({"x": x, "y": y, "z": z}, ["sum:0"], []),
        ({"x": z, "y": x, "z": z}, ["sum:0"], []),
        ({"x": y}, ["twice:0"], []),
        ({"x": x}, ["twice:0"], []),
    ]


def tables_of_tensors():
    m = tf.lookup.experimental.MutableHashTable(tf.int64, tf.float32, default_value=[-1.0, 0.5, 2.0], name="vecs")
    k = tf.compat.v1.placeholder(tf.int64, [None], name="k")
    v = tf.compat.v1.placeholder(tf.float32, [None, None], name="v")
    m.insert(k, v, name="insert")
    m.remove(tf.compat.v1.placeholder(tf.int64, [None], name="rk"), name="remove")
    q = tf.compat.v1.placeholder(tf.int64, [None, 2], name="q")
    tf.identity(m.lookup(q), name="found")
    tf.identity(m.size(), name="size")
    keys, vals = m.export()
    tf.identity(tf.gather(vals, tf.argsort(keys)), name="sorted_vals")
    tf.identity(tf.sort(keys), name="sorted_keys")


def tables_of_tensors_steps():
    k = np.array([7, -3, 12], np.int64)
    q = np.array([[-3, 5], [7, 0]], np.int64)
    return [
        ({"q": q}, ["found:0", "size:0"], []),
        ({"k": k, "v": f32(3, 3)}, [], ["insert/LookupTableInsertV2"]),
        ({"q": q}, ["found:0", "size:0"], []),
        ({"k": k[:1], "v": f32(1, 3)}, [], ["insert/LookupTableInsertV2"]),
        ({}, ["sorted_keys:0", "sorted_vals:0"], []),
        ({"k": k, "v": f32(3, 2)}, [], ["insert/LookupTableInsertV2"]),
        ({"q": q}, ["found:0"], []),
        ({"rk": np.array([-3, 99], np.int64)}, [], ["remove/LookupTableRemoveV2"]),
        ({"q": q}, ["found:0", "size:0"], []),
    ]


OPTIMIZERS = {
    "sgd": lambda: tf.compat.v1.train.GradientDescentOptimizer(0.1),
    "momentum": lambda: tf.compat.v1.train.MomentumOptimizer(0.05, 0.9),
    "nesterov": lambda: tf.compat.v1.train.MomentumOptimizer(0.05, 0.9, use_nesterov=True),
    "adam": lambda: tf.compat.v1.train.AdamOptimizer(0.05),
    "adagrad": lambda: tf.compat.v1.train.AdagradOptimizer(0.2),
    "rmsprop": lambda: tf.compat.v1.train.RMSPropOptimizer(0.02, momentum=0.5),
    "centered_rmsprop": lambda: tf.compat.v1.train.RMSPropOptimizer(0.02, momentum=0.5, centered=True),
    "ftrl": lambda: tf.compat.v1.train.FtrlOptimizer(0.3, l1_regularization_strength=0.01, l2_regularization_strength=0.02),
    "ftrl_power": lambda: tf.compat.v1.train.FtrlOptimizer(0.3, learning_rate_power=-0.7, l1_regularization_strength=0.01),
    "ftrl_v2": lambda: tf.compat.v1.train.FtrlOptimizer(0.3, l1_regularization_strength=0.01, l2_shrinkage_regularization_strength=0.05),
    "rmsprop": lambda: tf.compat.v1.train.RMSPropOptimizer(0.02, momentum=0.5),
    "centered_rmsprop": lambda: tf.compat.v1.train.RMSPropOptimizer(0.02, momentum=0.5, centered=True),
}


def train(opt, resource):
    """A linear model and a hidden layer minimising an MSE with opt."""
    def build():
        x = tf.compat.v1.placeholder(tf.float32, [None, 3], name="x")
        y = tf.compat.v1.placeholder(tf.float32, [None, 2], name="y")
        w1 = tf.compat.v1.get_variable("w1", initializer=f32(3, 4), use_resource=resource)
        b1 = tf.compat.v1.get_variable("b1", initializer=f32(4), use_resource=resource)
        w2 = tf.compat.v1.get_variable("w2", initializer=f32(4, 2), use_resource=resource)
        h = tf.tanh(tf.matmul(x, w1) + b1)
        loss = tf.reduce_mean(tf.square(tf.matmul(h, w2) - y), name="loss")
        OPTIMIZERS[opt]().minimize(loss, name="train")
        for v in (w1, b1, w2):
            tf.identity(v, name=v.op.name + "_value")
        tf.compat.v1.global_variables_initializer()
    return build


def train_steps():
    x, y = f32(6, 3), f32(6, 2)
    steps = [({}, [], ["init"])]
    for _ in range(5):
        steps.append(({"x": x, "y": y}, ["loss:0"], ["train"]))
        steps.append(({}, ["w1_value:0", "b1_value:0", "w2_value:0"], []))
    return steps


def train_embedding(opt=lambda: tf.compat.v1.train.AdagradOptimizer(0.3)):
    """An embedding trained with a sparse optimizer: TF applies its
    IndexedSlices gradient with ResourceSparseApply* (Adagrad by default;
    SPARSE_OPTIMIZERS for the others), repeated ids summed first."""
    def build():
        ids = tf.compat.v1.placeholder(tf.int64, [None], name="ids")
        y = tf.compat.v1.placeholder(tf.float32, [None, 3], name="y")
        emb = tf.compat.v1.get_variable("emb", initializer=f32(10, 3), use_resource=True)
        e = tf.nn.embedding_lookup(emb, ids)
        loss = tf.reduce_mean(tf.square(e - y), name="loss")
        opt().minimize(loss, name="train")
        tf.identity(emb, name="emb_value")
        tf.compat.v1.global_variables_initializer()
    return build


# The sparse optimizers train_embedding_<name> runs, beside Adagrad's
# train_embedding.
SPARSE_OPTIMIZERS = {
    "momentum": lambda: tf.compat.v1.train.MomentumOptimizer(0.1, 0.9),
    "nesterov": lambda: tf.compat.v1.train.MomentumOptimizer(0.1, 0.9, use_nesterov=True),
    "ftrl": lambda: tf.compat.v1.train.FtrlOptimizer(0.3, l1_regularization_strength=0.01, l2_regularization_strength=0.02),
    "ftrl_v2": lambda: tf.compat.v1.train.FtrlOptimizer(0.3, l1_regularization_strength=0.01, l2_shrinkage_regularization_strength=0.05),
    "rmsprop": lambda: tf.compat.v1.train.RMSPropOptimizer(0.02, momentum=0.5),
    "centered_rmsprop": lambda: tf.compat.v1.train.RMSPropOptimizer(0.02, momentum=0.5, centered=True),
}


def train_embedding_steps():
    steps = [({}, [], ["init"])]
    for _ in range(4):
        ids = rng.integers(0, 10, 6).astype(np.int64)
        steps.append(({"ids": ids, "y": f32(6, 3)}, ["loss:0"], ["train"]))
        steps.append(({}, ["emb_value:0"], []))
    return steps


def apply_errors():
    """The optimizer kernels' own checks, raw ops on ref and resource
    variables: an uninitialised variable, a gradient of the wrong shape, a
    learning rate that is not a scalar, and Adagrad without update_slots."""
    g = tf.compat.v1.placeholder(tf.float32, None, name="g")
    lr = tf.compat.v1.placeholder(tf.float32, None, name="lr")
    v = tf.compat.v1.Variable(f32(2, 3), name="v")
    acc = tf.compat.v1.Variable(np.abs(f32(2, 3)) + 0.5, name="acc")
    tf.raw_ops.ApplyGradientDescent(var=v._ref(), alpha=lr, delta=g, name="sgd")
    tf.raw_ops.ApplyAdagrad(var=v._ref(), accum=acc._ref(), lr=lr, grad=g, update_slots=False, name="adagrad_fixed")
    r = tf.compat.v1.get_variable("r", initializer=f32(2, 3), use_resource=True)
    ra = tf.compat.v1.get_variable("ra", initializer=np.abs(f32(2, 3)) + 0.5, use_resource=True)
    tf.raw_ops.ResourceApplyAdagrad(var=r.handle, accum=ra.handle, lr=lr, grad=g, update_slots=False, name="r_adagrad_fixed")
    tf.raw_ops.ResourceApplyMomentum(var=r.handle, accum=ra.handle, lr=lr, grad=g, momentum=0.9, use_nesterov=True, name="r_nesterov")
    for x in (v, acc, r, ra):
        tf.identity(x, name=x.op.name + "_value")
    tf.compat.v1.global_variables_initializer()


def apply_errors_steps():
    g, bad = f32(2, 3), f32(3, 2)
    lr = np.float32(0.1)
    vals = ["v_value:0", "acc_value:0", "r_value:0", "ra_value:0"]
    return [
        ({"g": g, "lr": lr}, [], ["sgd"]),
        ({"g": g, "lr": lr}, [], ["r_nesterov"]),
        ({}, [], ["init"]),
        ({"g": bad, "lr": lr}, [], ["sgd"]),
        ({"g": g, "lr": np.array([lr, lr])}, [], ["sgd"]),
        ({"g": bad, "lr": lr}, [], ["r_adagrad_fixed"]),
        ({"g": g, "lr": np.array([lr])}, [], ["r_nesterov"]),
        ({"g": g, "lr": lr}, [], ["sgd"]),
        ({}, vals, []),
        ({"g": g, "lr": lr}, [], ["adagrad_fixed"]),
        ({"g": g, "lr": lr}, [], ["r_adagrad_fixed"]),
        ({"g": g, "lr": lr}, [], ["r_nesterov"]),
        ({}, vals, []),
    ]


def main():
    path = os.path.join(here, "cases.json")
    only = set(sys.argv[1:])
    if only:
        # Regenerate the named cases only, in place.
        with open(path) as f:
            old = json.load(f)["cases"]
        new = {c["name"]: c for c in all_cases(only)}
        cases = [new.pop(c["name"], c) for c in old] + list(new.values())
    else:
        cases = all_cases(None)
    with open(path, "w") as f:
        json.dump({"cases": cases}, f, indent=1)
        f.write("\n")


def all_cases(only):
    """The cases, or only those named in only (a set) when it is given."""
    builders = [
        ("ref_vars", ref_vars, ref_steps),
        ("resource_vars", resource_vars, resource_steps),
        ("saver", saver, saver_steps),
        ("mlp", mlp, mlp_steps),
        ("tables", tables, tables_steps),
        ("tables_of_tensors", tables_of_tensors, tables_of_tensors_steps),
        ("temporary_vars", temporary_vars, temporary_steps),
        ("apply_errors", apply_errors, apply_errors_steps),
        ("train_embedding", train_embedding(), train_embedding_steps),
    ] + [
        ("train_embedding_" + opt, train_embedding(f), train_embedding_steps)
        for opt, f in SPARSE_OPTIMIZERS.items()
    ] + [
        ("train_%s_%s" % (opt, "resource" if res else "ref"), train(opt, res), train_steps)
        for opt in OPTIMIZERS for res in (False, True)
    ]
    return [case(name, build, steps()) for name, build, steps in builders if only is None or name in only]


if __name__ == "__main__":
    main()
