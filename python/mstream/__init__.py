"""NumPy in, NumPy out: run TensorFlow GraphDefs through libmstream.so.

A ctypes client of the TensorFlow 2.15 C API that libmstream.so exports (any
libtensorflow.so with the same C API works too, except for the MS_ text-format
helpers)::

    import numpy as np
    import mstream

    with mstream.Graph.from_file("examples/data/model_test.pbtxt") as g, \\
         mstream.Session(g, config="intra_op_parallelism_threads: 2") as s:
        (y,) = s.run(["output"], {"dense": np.zeros((4, 13), np.float32), ...})

Errors from the library raise :class:`TFError`, whose ``code`` is a
:class:`Code`. The library is found through the ``MSTREAM_LIB`` environment
variable, else ``build/libmstream.so`` beside this package's parent folder.
Handles are released by ``close()`` or a ``with`` block; finalizers are only a
safety net.
"""

import ctypes
import enum
import os
import threading

import numpy as np

__all__ = [
    "Code", "TFError", "Graph", "Session", "library", "version", "tf_version",
    "graph_def_text_to_binary", "config_text_to_binary", "load", "SavedModel",
    "Signature",
]


class Code(enum.IntEnum):
    """TensorFlow's status codes (TF_Code), with TF's names."""

    OK = 0
    CANCELLED = 1
    UNKNOWN = 2
    INVALID_ARGUMENT = 3
    DEADLINE_EXCEEDED = 4
    NOT_FOUND = 5
    ALREADY_EXISTS = 6
    PERMISSION_DENIED = 7
    RESOURCE_EXHAUSTED = 8
    FAILED_PRECONDITION = 9
    ABORTED = 10
    OUT_OF_RANGE = 11
    UNIMPLEMENTED = 12
    INTERNAL = 13
    UNAVAILABLE = 14
    DATA_LOSS = 15
    UNAUTHENTICATED = 16


class TFError(Exception):
    """A failed TF_Status: ``code`` (a Code) and ``message``, both TF's."""

    def __init__(self, code, message):
        try:
            code = Code(code)
        except ValueError:
            pass
        super().__init__("%s: %s" % (getattr(code, "name", code), message))
        self.code = code
        self.message = message


# TF_DataType values and their NumPy equivalents. TF_STRING maps to object
# arrays of bytes.
TF_STRING = 7
_NP_OF_TF = {
    1: np.float32, 2: np.float64, 3: np.int32, 4: np.uint8, 5: np.int16,
    6: np.int8, 7: object, 8: np.complex64, 9: np.int64, 10: np.bool_,
    17: np.uint16, 18: np.complex128, 19: np.float16, 22: np.uint32,
    23: np.uint64,
}
_TF_OF_NP = {np.dtype(v): k for k, v in _NP_OF_TF.items() if v is not object}


class _Buffer(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("length", ctypes.c_size_t),
        ("data_deallocator", ctypes.c_void_p),
    ]


class _Output(ctypes.Structure):
    _fields_ = [("oper", ctypes.c_void_p), ("index", ctypes.c_int)]


_TSTRING_SIZE = 24  # sizeof(TF_TString), fixed by TF's ABI

_lib = None
_lib_lock = threading.Lock()


def _default_path():
    """MSTREAM_LIB, else the checkout's build/libmstream.so (a source tree or
    an editable install), else the bare name for the dynamic loader."""
    env = os.environ.get("MSTREAM_LIB")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    built = os.path.normpath(os.path.join(here, "..", "..", "build", "libmstream.so"))
    if os.path.exists(built):
        return built
    return "libmstream.so"


def _declare(lib):
    vp, sz, i, c_char_p = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_char_p
    i64p = ctypes.POINTER(ctypes.c_int64)
    buf_p = ctypes.POINTER(_Buffer)
    out_p = ctypes.POINTER(_Output)
    sigs = {
        "TF_Version": (c_char_p, []),
        "TF_NewStatus": (vp, []),
        "TF_DeleteStatus": (None, [vp]),
        "TF_GetCode": (i, [vp]),
        "TF_Message": (c_char_p, [vp]),
        "TF_NewBuffer": (buf_p, []),
        "TF_NewBufferFromString": (buf_p, [c_char_p, sz]),
        "TF_DeleteBuffer": (None, [buf_p]),
        "TF_NewGraph": (vp, []),
        "TF_DeleteGraph": (None, [vp]),
        "TF_NewImportGraphDefOptions": (vp, []),
        "TF_DeleteImportGraphDefOptions": (None, [vp]),
        "TF_ImportGraphDefOptionsSetPrefix": (None, [vp, c_char_p]),
        "TF_GraphImportGraphDef": (None, [vp, buf_p, vp, vp]),
        "TF_GraphOperationByName": (vp, [vp, c_char_p]),
        "TF_GraphNextOperation": (vp, [vp, ctypes.POINTER(sz)]),
        "TF_OperationName": (c_char_p, [vp]),
        "TF_OperationOpType": (c_char_p, [vp]),
        "TF_OperationNumOutputs": (i, [vp]),
        "TF_NewSessionOptions": (vp, []),
        "TF_DeleteSessionOptions": (None, [vp]),
        "TF_SetConfig": (None, [vp, c_char_p, sz, vp]),
        "TF_NewSession": (vp, [vp, vp, vp]),
        "TF_LoadSessionFromSavedModel": (vp, [vp, buf_p, c_char_p, ctypes.POINTER(c_char_p), i,
                                              vp, buf_p, vp]),
        "TF_CloseSession": (None, [vp, vp]),
        "TF_DeleteSession": (None, [vp, vp]),
        "TF_SessionRun": (None, [vp, buf_p, out_p, ctypes.POINTER(vp), i,
                                 out_p, ctypes.POINTER(vp), i,
                                 ctypes.POINTER(vp), i, buf_p, vp]),
        "TF_AllocateTensor": (vp, [i, i64p, i, sz]),
        "TF_DeleteTensor": (None, [vp]),
        "TF_TensorType": (i, [vp]),
        "TF_NumDims": (i, [vp]),
        "TF_Dim": (ctypes.c_int64, [vp, i]),
        "TF_TensorByteSize": (sz, [vp]),
        "TF_TensorData": (vp, [vp]),
        "TF_StringInit": (None, [vp]),
        "TF_StringCopy": (None, [vp, c_char_p, sz]),
        "TF_StringGetDataPointer": (vp, [vp]),
        "TF_StringGetSize": (sz, [vp]),
        "TF_StringDealloc": (None, [vp]),
    }
    optional = {
        "MS_Version": (c_char_p, []),
        "MS_GraphDefTextToBinary": (None, [c_char_p, sz, buf_p, vp]),
        "MS_ConfigProtoTextToBinary": (None, [c_char_p, sz, buf_p, vp]),
        "MS_SessionStats": (None, [vp, buf_p, vp]),
    }
    for table, required in ((sigs, True), (optional, False)):
        for name, (res, args) in table.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                if required:
                    raise
                continue
            fn.restype = res
            fn.argtypes = args


def library(path=None):
    """Loads (once) and returns the ctypes handle of the library."""
    global _lib
    with _lib_lock:
        if _lib is None:
            p = path or _default_path()
            if os.sep in p:
                p = os.path.abspath(p)
            try:
                lib = ctypes.CDLL(p)
            except OSError as e:
                raise OSError("mstream: cannot load %s (%s); build it with `make` and set "
                              "MSTREAM_LIB to its path" % (p, e)) from None
            _declare(lib)
            _lib = lib
        return _lib


class _ThreadStatus:
    """A TF_Status that one thread reuses for every Session.run: every
    library call sets it, so it needs no reset, and a new one per call cost
    two calls into the library."""

    def __init__(self, lib):
        self.lib = lib
        self.ptr = lib.TF_NewStatus()

    def check(self):
        _Status.check(self)

    def __del__(self):
        try:
            self.lib.TF_DeleteStatus(self.ptr)
        except Exception:
            pass


_tls = threading.local()


def _thread_status(lib):
    st = getattr(_tls, "status", None)
    if st is None or st.lib is not lib:
        st = _tls.status = _ThreadStatus(lib)
    return st


class _Status:
    """A TF_Status for the duration of one call."""

    def __init__(self):
        self.lib = library()
        self.ptr = self.lib.TF_NewStatus()

    def __enter__(self):
        return self.ptr

    def __exit__(self, *exc):
        try:
            if exc[0] is None:
                self.check()
        finally:
            self.lib.TF_DeleteStatus(self.ptr)
        return False

    def check(self):
        code = self.lib.TF_GetCode(self.ptr)
        if code != 0:
            msg = self.lib.TF_Message(self.ptr) or b""
            raise TFError(code, msg.decode("utf-8", "replace"))


def version():
    """MS_Version(): this library's own version."""
    return library().MS_Version().decode()


def tf_version():
    """TF_Version(): the TensorFlow C API version implemented."""
    return library().TF_Version().decode()


def _text_to_binary(fn_name, text):
    lib = library()
    if isinstance(text, str):
        text = text.encode("utf-8")
    fn = getattr(lib, fn_name, None)
    if fn is None:
        raise TFError(Code.UNIMPLEMENTED, "%s is not exported by %s" % (fn_name, lib._name))
    out = lib.TF_NewBuffer()
    try:
        with _Status() as s:
            fn(text, len(text), out, s)
        return ctypes.string_at(out.contents.data, out.contents.length)
    finally:
        lib.TF_DeleteBuffer(out)


def graph_def_text_to_binary(text):
    """Text-format GraphDef (str or bytes) -> serialized GraphDef bytes."""
    return _text_to_binary("MS_GraphDefTextToBinary", text)


def config_text_to_binary(text):
    """Text-format ConfigProto (str or bytes) -> serialized ConfigProto bytes."""
    return _text_to_binary("MS_ConfigProtoTextToBinary", text)


def _split_name(name):
    """'op' or 'op:2' -> ('op', index)."""
    op, sep, idx = name.rpartition(":")
    if sep and idx.isdigit():
        return op, int(idx)
    return name, 0


class Graph:
    """A TF_Graph. Build one with from_bytes, from_text or from_file."""

    def __init__(self):
        self._lib = library()
        self._ptr = self._lib.TF_NewGraph()
        # name -> _Output of the outputs found so far: a graph only grows
        # and keeps its operations, so an output found stays right (a name
        # not found is looked up again, as the graph may gain it).
        self._outputs = {}

    @classmethod
    def from_bytes(cls, graph_def, prefix=None):
        g = cls()
        try:
            g.import_graph_def(graph_def, prefix=prefix)
        except Exception:
            g.close()
            raise
        return g

    @classmethod
    def from_text(cls, text, prefix=None):
        return cls.from_bytes(graph_def_text_to_binary(text), prefix=prefix)

    @classmethod
    def from_file(cls, path, prefix=None):
        """Reads a .pb (binary) or .pbtxt (text) GraphDef."""
        with open(path, "rb") as f:
            data = f.read()
        try:
            if path.endswith((".pbtxt", ".txt")):
                return cls.from_text(data, prefix=prefix)
            return cls.from_bytes(data, prefix=prefix)
        except TFError as e:
            raise TFError(e.code, "%s: %s" % (path, e.message)) from None

    def import_graph_def(self, graph_def, prefix=None):
        """Imports serialized GraphDef bytes into this graph."""
        lib = self._lib
        buf = lib.TF_NewBufferFromString(graph_def, len(graph_def))
        opts = lib.TF_NewImportGraphDefOptions()
        try:
            if prefix:
                lib.TF_ImportGraphDefOptionsSetPrefix(opts, prefix.encode())
            with _Status() as s:
                lib.TF_GraphImportGraphDef(self._handle(), buf, opts, s)
        finally:
            lib.TF_DeleteImportGraphDefOptions(opts)
            lib.TF_DeleteBuffer(buf)

    def _handle(self):
        if self._ptr is None:
            raise TFError(Code.FAILED_PRECONDITION, "graph is closed")
        return self._ptr

    def operation(self, name):
        """The TF_Operation* named name; TFError NOT_FOUND if none."""
        op = self._lib.TF_GraphOperationByName(self._handle(), name.encode())
        if not op:
            raise TFError(Code.NOT_FOUND, "no operation named '%s' in the graph" % name)
        return op

    def output(self, name):
        """'op' or 'op:i' -> TF_Output, checking the index."""
        out = self._outputs.get(name)
        if out is not None and self._ptr is not None:
            return out
        op_name, idx = _split_name(name)
        op = self.operation(op_name)
        if idx >= self._lib.TF_OperationNumOutputs(op):
            raise TFError(Code.OUT_OF_RANGE, "operation '%s' has no output %d" % (op_name, idx))
        out = _Output(op, idx)
        self._outputs[name] = out
        return out

    def operations(self):
        """[(name, op type)] of every operation, in TF_GraphNextOperation order."""
        pos = ctypes.c_size_t(0)
        out = []
        while True:
            op = self._lib.TF_GraphNextOperation(self._handle(), ctypes.byref(pos))
            if not op:
                return out
            out.append((self._lib.TF_OperationName(op).decode(),
                        self._lib.TF_OperationOpType(op).decode()))

    def close(self):
        if self._ptr is not None:
            self._lib.TF_DeleteGraph(self._ptr)
            self._ptr = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _to_tensor(lib, value):
    """NumPy-compatible value -> new TF_Tensor* (caller deletes it)."""
    if isinstance(value, (bytes, str)):
        value = np.array(value if isinstance(value, bytes) else value.encode(), dtype=object)
    arr = np.asarray(value)
    if arr.dtype.kind in "SUO":
        return _string_tensor(lib, arr)
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    if not arr.flags.c_contiguous:
        # Not np.ascontiguousarray: before NumPy 1.25 it turns a 0-d array
        # into shape [1], and every scalar placeholder would then fail.
        arr = arr.copy(order="C")
    dt = _TF_OF_NP.get(arr.dtype)
    if dt is None:
        raise TFError(Code.INVALID_ARGUMENT, "unsupported NumPy dtype %s" % arr.dtype)
    dims = (ctypes.c_int64 * max(arr.ndim, 1))(*arr.shape)
    t = lib.TF_AllocateTensor(dt, dims, arr.ndim, arr.nbytes)
    if not t:
        raise TFError(Code.RESOURCE_EXHAUSTED, "TF_AllocateTensor failed for shape %s" % (arr.shape,))
    if arr.nbytes:
        ctypes.memmove(lib.TF_TensorData(t), arr.ctypes.data, arr.nbytes)
    return t


def _string_tensor(lib, arr):
    flat = arr.reshape(-1)
    dims = (ctypes.c_int64 * max(arr.ndim, 1))(*arr.shape)
    t = lib.TF_AllocateTensor(TF_STRING, dims, arr.ndim, _TSTRING_SIZE * flat.size)
    if not t:
        raise TFError(Code.RESOURCE_EXHAUSTED, "TF_AllocateTensor failed for a string tensor")
    base = lib.TF_TensorData(t)
    for i, v in enumerate(flat):
        if isinstance(v, str):
            v = v.encode("utf-8")
        elif not isinstance(v, (bytes, bytearray)):
            v = bytes(v) if isinstance(v, np.bytes_) else str(v).encode("utf-8")
        p = base + i * _TSTRING_SIZE
        lib.TF_StringInit(p)
        lib.TF_StringCopy(p, bytes(v), len(v))
    return t


def _from_tensor(lib, t):
    """TF_Tensor* -> a NumPy array that owns a copy of the data."""
    dt = lib.TF_TensorType(t)
    shape = tuple(lib.TF_Dim(t, i) for i in range(lib.TF_NumDims(t)))
    data = lib.TF_TensorData(t)
    if dt == TF_STRING:
        n = int(np.prod(shape, dtype=np.int64))
        out = np.empty(n, dtype=object)
        for i in range(n):
            p = data + i * _TSTRING_SIZE
            size = lib.TF_StringGetSize(p)
            out[i] = ctypes.string_at(lib.TF_StringGetDataPointer(p), size) if size else b""
        return out.reshape(shape)
    npdt = _NP_OF_TF.get(dt)
    if npdt is None:
        raise TFError(Code.UNIMPLEMENTED, "fetched tensor has dtype %d, which has no NumPy type" % dt)
    nbytes = lib.TF_TensorByteSize(t)
    if not nbytes:
        return np.zeros(shape, dtype=npdt)
    # One copy, out of the tensor's memory into the array's.
    view = (ctypes.c_char * nbytes).from_address(data)
    return np.frombuffer(view, dtype=npdt).reshape(shape).copy()


class Session:
    """A TF_Session over a Graph; config is a ConfigProto, text (str) or binary (bytes).

    Many threads may call run() on one session at once (the library allows it).
    """

    def __init__(self, graph, config=None):
        self._lib = library()
        self._graph = graph
        self._ptr = None
        self._sigs = {}  # (feed names, fetch names, target names) -> arrays
        opts = self._lib.TF_NewSessionOptions()
        try:
            if config is not None:
                if isinstance(config, str):
                    config = config_text_to_binary(config)
                with _Status() as s:
                    self._lib.TF_SetConfig(opts, config, len(config), s)
            with _Status() as s:
                ptr = self._lib.TF_NewSession(graph._handle(), opts, s)
            self._ptr = ptr
        finally:
            self._lib.TF_DeleteSessionOptions(opts)

    def run(self, fetches, feeds=None, targets=None):
        """Runs the graph and returns a list of arrays, one per fetch.

        fetches: names 'op' or 'op:i'. feeds: {name: array-like}; str/bytes
        and object arrays become TF_STRING. targets: op names run for effect.
        A single fetch name (str) returns a single array.
        """
        if self._ptr is None:
            raise TFError(Code.FAILED_PRECONDITION, "session is closed")
        single = isinstance(fetches, str)
        fetch_list = (fetches,) if single else tuple(fetches)
        feeds = feeds or {}
        targets = tuple(targets or ())
        lib = self._lib
        sig = (tuple(feeds), fetch_list, targets)
        arrays = self._sigs.get(sig)
        if arrays is None:
            arrays = self._signature(*sig)
        in_ops, out_ops, tgt_ops = arrays
        n_in, n_out, n_t = len(feeds), len(fetch_list), len(targets)
        in_vals = (ctypes.c_void_p * max(n_in, 1))()
        out_vals = (ctypes.c_void_p * max(n_out, 1))()
        made = []
        try:
            for i, value in enumerate(feeds.values()):
                t = _to_tensor(lib, value)
                made.append(t)
                in_vals[i] = t
            s = _thread_status(lib)
            lib.TF_SessionRun(self._ptr, None, in_ops, in_vals, n_in,
                              out_ops, out_vals, n_out, tgt_ops, n_t, None, s.ptr)
            s.check()
            try:
                results = [_from_tensor(lib, out_vals[i]) for i in range(n_out)]
            finally:
                for i in range(n_out):
                    if out_vals[i]:
                        lib.TF_DeleteTensor(out_vals[i])
        finally:
            for t in made:
                lib.TF_DeleteTensor(t)
        return results[0] if single else results

    def _signature(self, feed_names, fetch_names, target_names):
        """The TF_Output and TF_Operation* arrays of a run's signature, built
        once and kept (read-only, so concurrent runs share them)."""
        g = self._graph
        in_ops = (_Output * max(len(feed_names), 1))()
        out_ops = (_Output * max(len(fetch_names), 1))()
        tgt_ops = (ctypes.c_void_p * max(len(target_names), 1))()
        for i, name in enumerate(feed_names):
            in_ops[i] = g.output(name)
        for i, name in enumerate(fetch_names):
            out_ops[i] = g.output(name)
        for i, name in enumerate(target_names):
            tgt_ops[i] = g.operation(name)
        if len(self._sigs) >= 256:
            self._sigs.clear()
        arrays = in_ops, out_ops, tgt_ops
        self._sigs[(feed_names, fetch_names, target_names)] = arrays
        return arrays

    def train(self, train_op, batches, fetches=(), every=1, init=None, init_feeds=None):
        """Runs a training loop: one run of train_op (an op name, or a list
        of them) per feed dict of batches (any iterable of {name: array}),
        fetching fetches (names 'op' or 'op:i') in the same run every
        `every` steps and at the last. init, when given, is run first as a
        target (e.g. "init"), with init_feeds.

        Returns [(step, [values, ...]), ...] for the steps that fetched::

            curve = s.train("train", ({"x": x, "y": y} for x, y in data),
                            fetches=["loss:0"], every=10, init="init")
        """
        targets = [train_op] if isinstance(train_op, str) else list(train_op)
        fetches = list(fetches)
        if init is not None:
            self.run([], init_feeds, [init] if isinstance(init, str) else list(init))
        out = []
        it = iter(batches)
        batch = next(it, None)
        step = 0
        while batch is not None:
            following = next(it, None)
            if fetches and (step % every == 0 or following is None):
                out.append((step, self.run(fetches, batch, targets)))
            else:
                self.run([], batch, targets)
            batch, step = following, step + 1
        return out

    def stats(self):
        """MS_SessionStats as a dict (library-specific counters)."""
        import json
        lib = self._lib
        out = lib.TF_NewBuffer()
        try:
            with _Status() as s:
                lib.MS_SessionStats(self._ptr, out, s)
            return json.loads(ctypes.string_at(out.contents.data, out.contents.length) or b"{}")
        finally:
            lib.TF_DeleteBuffer(out)

    def close(self):
        if self._ptr is not None:
            ptr, self._ptr = self._ptr, None
            try:
                with _Status() as s:
                    self._lib.TF_CloseSession(ptr, s)
            finally:
                with _Status() as s:
                    self._lib.TF_DeleteSession(ptr, s)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


# ---- SavedModels ---------------------------------------------------------------


def _varint(b, i):
    v = shift = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << shift
        shift += 7
        if c < 0x80:
            return v, i


def _fields(b):
    """Yields (field number, value) of a protobuf message's wire bytes;
    length-delimited values as bytes, varints as ints (enough to read the
    SignatureDefs of a MetaGraphDef without a protobuf dependency)."""
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 2:
            n, i = _varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("unsupported wire type %d" % wt)
        yield num, v


def _map_entries(b):
    key = value = b""
    for num, v in _fields(b):
        if num == 1:
            key = v
        elif num == 2:
            value = v
    return key.decode(), value


def _tensor_infos(entries):
    out = {}
    for e in entries:
        key, info = _map_entries(e)
        name = ""
        for num, v in _fields(info):
            if num == 1:  # TensorInfo.name
                name = v.decode()
        out[key] = name
    return out


def _signatures(meta_graph_def):
    """{signature key: (inputs, outputs, method_name)} of a MetaGraphDef."""
    sigs = {}
    for num, v in _fields(meta_graph_def):
        if num != 5:  # MetaGraphDef.signature_def
            continue
        key, sig = _map_entries(v)
        ins, outs, method = [], [], ""
        for n, x in _fields(sig):
            if n == 1:
                ins.append(x)
            elif n == 2:
                outs.append(x)
            elif n == 3:
                method = x.decode()
        sigs[key] = (_tensor_infos(ins), _tensor_infos(outs), method)
    return sigs


class Signature:
    """One SignatureDef of a loaded SavedModel: call it with its input keys as
    keyword arguments; it returns {output key: array}."""

    def __init__(self, model, key, inputs, outputs, method_name):
        self._model = model
        self.key = key
        self.inputs = inputs  # {input key: tensor name}
        self.outputs = outputs  # {output key: tensor name}
        self.method_name = method_name

    def __call__(self, **feeds):
        unknown = sorted(set(feeds) - set(self.inputs))
        missing = sorted(set(self.inputs) - set(feeds))
        if unknown or missing:
            raise TypeError("signature %r takes inputs %s; got unknown %s, missing %s"
                            % (self.key, sorted(self.inputs), unknown, missing))
        keys = sorted(self.outputs)
        got = self._model.session.run([self.outputs[k] for k in keys],
                                      {self.inputs[k]: v for k, v in feeds.items()})
        return dict(zip(keys, got))

    def __repr__(self):
        return "Signature(%r, inputs=%s, outputs=%s)" % (self.key, sorted(self.inputs), sorted(self.outputs))


class SavedModel:
    """A SavedModel loaded by TF_LoadSessionFromSavedModel: its graph, its
    session (variables restored, init op run) and its signatures by key."""

    def __init__(self, path, tags=("serve",), config=None):
        lib = library()
        self.path = path
        self.graph = Graph()
        self.session = None
        opts = lib.TF_NewSessionOptions()
        mg = lib.TF_NewBuffer()
        try:
            if config is not None:
                if isinstance(config, str):
                    config = config_text_to_binary(config)
                with _Status() as s:
                    lib.TF_SetConfig(opts, config, len(config), s)
            tag_arr = (ctypes.c_char_p * max(len(tags), 1))(*[t.encode() for t in tags])
            with _Status() as s:
                ptr = lib.TF_LoadSessionFromSavedModel(opts, None, os.fsencode(path), tag_arr, len(tags),
                                                       self.graph._handle(), mg, s)
            sess = Session.__new__(Session)
            sess._lib, sess._graph, sess._ptr, sess._sigs = lib, self.graph, ptr, {}
            self.session = sess
            raw = ctypes.string_at(mg.contents.data, mg.contents.length) if mg.contents.length else b""
        except Exception:
            self.graph.close()
            raise
        finally:
            lib.TF_DeleteBuffer(mg)
            lib.TF_DeleteSessionOptions(opts)
        self.meta_graph_def = raw
        # TF2 writes its init op as a signature too; TF's loader hides it.
        self.signatures = {k: Signature(self, k, i, o, m) for k, (i, o, m) in _signatures(raw).items()
                           if k != "__saved_model_init_op"}

    def close(self):
        if self.session is not None:
            self.session.close()
            self.session = None
        self.graph.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


    def train(self, train_op, batches, fetches=(), every=1, init=None, init_feeds=None):
        """Session.train on the model's session (its variables restored):
        a SavedModel written with a train op (TF1's `train` tag) trains in
        place."""
        return self.session.train(train_op, batches, fetches, every, init, init_feeds)


def load(path, tags=("serve",), config=None):
    """Loads the SavedModel at path (the MetaGraphDef tagged exactly tags)::

        m = mstream.load("export/1")
        y = m.signatures["serving_default"](x=batch)["y"]
    """
    return SavedModel(path, tags=tags, config=config)
