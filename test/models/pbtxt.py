"""A small reader of TensorFlow GraphDefs for the NumPy references.

It is written here, independently of libmstream, so that the expected outputs
of test/models do not come from the code under test. It reads the protobuf
text format generically (messages become dicts of lists) and decodes the
binary wire format for the GraphDef fields the references need.
"""

import re
import struct

import numpy as np

_TOKEN = re.compile(r"""
    (?P<ws>\s+|\#[^\n]*)
  | (?P<str>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<punct>[{}\[\]:<>,;])
  | (?P<word>[-+.\w]+)
""", re.X)

_ESC = {"n": 10, "t": 9, "r": 13, "a": 7, "b": 8, "f": 12, "v": 11,
        "\\": 92, "'": 39, '"': 34, "?": 63}


def _unescape(s):
    out = bytearray()
    raw = s.encode("utf-8")
    i = 0
    while i < len(raw):
        c = raw[i]
        if c != 92:
            out.append(c)
            i += 1
            continue
        n = chr(raw[i + 1])
        if n in "01234567":
            j = i + 1
            while j < len(raw) and j < i + 4 and chr(raw[j]) in "01234567":
                j += 1
            out.append(int(raw[i + 1:j], 8) & 0xFF)
            i = j
        elif n in "xX":
            j = i + 2
            while j < len(raw) and j < i + 4 and chr(raw[j]) in "0123456789abcdefABCDEF":
                j += 1
            out.append(int(raw[i + 2:j], 16))
            i = j
        else:
            out.append(_ESC[n])
            i += 2
    return bytes(out)


def _tokens(text):
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            raise ValueError("pbtxt: bad character at %d: %r" % (pos, text[pos:pos + 20]))
        pos = m.end()
        if m.lastgroup != "ws":
            yield m.lastgroup, m.group(m.lastgroup)


def parse_text(text):
    """Parses a text-format message into {field: [values]}; strings are bytes,
    nested messages dicts, and other scalars their source text."""
    toks = list(_tokens(text))
    pos = 0

    def message(end):
        nonlocal pos
        msg = {}
        while pos < len(toks) and toks[pos][1] != end:
            kind, name = toks[pos]
            if kind != "word":
                raise ValueError("pbtxt: expected a field name, got %r" % name)
            pos += 1
            if toks[pos][1] == ":":
                pos += 1
            kind, v = toks[pos]
            if v in ("{", "<"):
                pos += 1
                val = message("}" if v == "{" else ">")
                pos += 1
                msg.setdefault(name, []).append(val)
            elif v == "[":
                pos += 1
                while toks[pos][1] != "]":
                    if toks[pos][1] == ",":
                        pos += 1
                        continue
                    msg.setdefault(name, []).append(scalar())
                pos += 1
            else:
                msg.setdefault(name, []).append(scalar())
            if pos < len(toks) and toks[pos][1] in (",", ";"):
                pos += 1
        return msg

    def scalar():
        nonlocal pos
        kind, v = toks[pos]
        pos += 1
        if kind == "str":
            b = _unescape(v[1:-1])
            while pos < len(toks) and toks[pos][0] == "str":  # adjacent strings concatenate
                b += _unescape(toks[pos][1][1:-1])
                pos += 1
            return b
        return v

    return message(None)


# ---- binary wire format -------------------------------------------------

def _varint(b, i):
    shift = result = 0
    while True:
        c = b[i]
        i += 1
        result |= (c & 0x7F) << shift
        if c < 0x80:
            return result, i
        shift += 7


def _wire(b):
    """Yields (field number, wire type, value) of one message's bytes."""
    i = 0
    while i < len(b):
        key, i = _varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = _varint(b, i)
        elif wt == 1:
            v = b[i:i + 8]
            i += 8
        elif wt == 2:
            n, i = _varint(b, i)
            v = b[i:i + n]
            i += n
        elif wt == 5:
            v = b[i:i + 4]
            i += 4
        else:
            raise ValueError("pb: wire type %d" % wt)
        yield f, wt, v


_DT_NAMES = {1: "DT_FLOAT", 2: "DT_DOUBLE", 3: "DT_INT32", 4: "DT_UINT8", 6: "DT_INT8",
             7: "DT_STRING", 9: "DT_INT64", 10: "DT_BOOL", 19: "DT_HALF"}

# Field numbers of the messages a GraphDef needs, and how to read them:
# (name, kind) with kind "msg:<Type>", "str", "bytes", "int", "sint", "bool",
# "float", "double", "enum:dtype".
_SCHEMA = {
    "GraphDef": {1: ("node", "msg:NodeDef"), 4: ("versions", "msg:Versions")},
    "Versions": {1: ("producer", "int"), 2: ("min_consumer", "int")},
    "NodeDef": {1: ("name", "bytes"), 2: ("op", "bytes"), 3: ("input", "bytes"),
                4: ("device", "bytes"), 5: ("attr", "msg:AttrEntry")},
    "AttrEntry": {1: ("key", "bytes"), 2: ("value", "msg:AttrValue")},
    "AttrValue": {2: ("s", "bytes"), 3: ("i", "int"), 4: ("f", "float"), 5: ("b", "bool"),
                  6: ("type", "enum:dtype"), 7: ("shape", "msg:Shape"),
                  8: ("tensor", "msg:Tensor"), 1: ("list", "msg:AttrList")},
    "AttrList": {2: ("s", "bytes"), 3: ("i", "int"), 4: ("f", "float"), 5: ("b", "bool"),
                 6: ("type", "enum:dtype"), 7: ("shape", "msg:Shape")},
    "Shape": {2: ("dim", "msg:Dim"), 3: ("unknown_rank", "bool")},
    "Dim": {1: ("size", "int")},
    "Tensor": {1: ("dtype", "enum:dtype"), 2: ("tensor_shape", "msg:Shape"),
               4: ("tensor_content", "bytes"), 5: ("float_val", "float"),
               6: ("double_val", "double"), 7: ("int_val", "int"), 8: ("string_val", "bytes"),
               10: ("int64_val", "int"), 11: ("bool_val", "bool")},
}


def _scalar(kind, wt, v):
    if kind == "int":
        return str(v - (1 << 64) if v >= 1 << 63 else v)
    if kind == "bool":
        return "true" if v else "false"
    if kind == "float":
        return repr(struct.unpack("<f", v)[0])
    if kind == "double":
        return repr(struct.unpack("<d", v)[0])
    if kind == "enum:dtype":
        return _DT_NAMES.get(v, str(v))
    return bytes(v)


def _decode(b, typ):
    schema = _SCHEMA[typ]
    msg = {}
    for f, wt, v in _wire(b):
        if f not in schema:
            continue
        name, kind = schema[f]
        if kind.startswith("msg:"):
            msg.setdefault(name, []).append(_decode(v, kind[4:]))
        elif wt == 2 and kind not in ("bytes", "str"):  # packed repeated scalars
            if kind == "float":
                vals = [v[k:k + 4] for k in range(0, len(v), 4)]
            elif kind == "double":
                vals = [v[k:k + 8] for k in range(0, len(v), 8)]
            else:
                vals, k = [], 0
                while k < len(v):
                    x, k = _varint(v, k)
                    vals.append(x)
            msg.setdefault(name, []).extend(_scalar(kind, 0, x) for x in vals)
        else:
            msg.setdefault(name, []).append(_scalar(kind, wt, v))
    return msg


def load(path):
    """Reads a GraphDef file (.pb binary, anything else text) as a dict."""
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".pb"):
        return _decode(data, "GraphDef")
    return parse_text(data.decode("utf-8"))


# ---- helpers over the parsed GraphDef -----------------------------------

_NP = {"DT_FLOAT": np.float32, "DT_DOUBLE": np.float64, "DT_INT32": np.int32,
       "DT_INT64": np.int64, "DT_UINT8": np.uint8, "DT_INT8": np.int8,
       "DT_BOOL": np.bool_, "DT_HALF": np.float16}
_VALS = {"DT_FLOAT": "float_val", "DT_DOUBLE": "double_val", "DT_INT32": "int_val",
         "DT_INT64": "int64_val", "DT_UINT8": "int_val", "DT_INT8": "int_val",
         "DT_BOOL": "bool_val", "DT_HALF": "half_val"}


def nodes(g):
    """Maps node name to NodeDef dict."""
    return {n["name"][0].decode(): n for n in g.get("node", [])}


def attr(node, key):
    for a in node.get("attr", []):
        if a["key"][0].decode() == key:
            return a["value"][0]
    return None


def shape_dims(shape):
    return [int(d.get("size", ["0"])[0]) for d in shape.get("dim", [])]


def tensor_value(t):
    """A TensorProto dict as a NumPy array (tensor_content, or *_val with the
    last value repeated to fill the shape, as TF does)."""
    dt = t["dtype"][0]
    dims = shape_dims(t.get("tensor_shape", [{}])[0])
    n = int(np.prod(dims)) if dims else 1
    if dt == "DT_STRING":
        vals = list(t.get("string_val", []))
        out = np.empty(n, dtype=object)
        for i in range(n):
            out[i] = vals[min(i, len(vals) - 1)] if vals else b""
        return out.reshape(dims)
    npdt = _NP[dt]
    if "tensor_content" in t:
        return np.frombuffer(t["tensor_content"][0], dtype=npdt).reshape(dims).copy()
    raw = t.get(_VALS[dt], [])
    if dt == "DT_BOOL":
        vals = [v in ("true", "True", "1", "t") for v in raw]
    elif dt in ("DT_FLOAT", "DT_DOUBLE"):
        vals = [float(v.rstrip("fF")) if v not in ("inf", "-inf", "nan") else float(v) for v in raw]
    else:
        vals = [int(v) for v in raw]
    out = np.zeros(n, dtype=npdt)
    if vals:
        out[:len(vals)] = vals
        out[len(vals):] = vals[-1]
    return out.reshape(dims)


def const(g, name):
    """The value of Const node name."""
    return tensor_value(attr(nodes(g)[name], "value")["tensor"][0])
