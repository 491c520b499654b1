"""Helpers shared by the tests: the package import and text GraphDefs."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))

import mstream  # noqa: E402

DTYPES = {"float32": "DT_FLOAT", "float64": "DT_DOUBLE", "int32": "DT_INT32",
          "int64": "DT_INT64", "string": "DT_STRING", "bool": "DT_BOOL",
          "float16": "DT_HALF", "uint8": "DT_UINT8", "int8": "DT_INT8",
          "int16": "DT_INT16", "uint16": "DT_UINT16", "uint32": "DT_UINT32",
          "uint64": "DT_UINT64", "complex64": "DT_COMPLEX64",
          "complex128": "DT_COMPLEX128"}


def placeholder(name, dtype, shape=None):
    """A Placeholder NodeDef in text format; shape None = unknown rank."""
    if shape is None:
        shape_txt = "unknown_rank: true"
    else:
        shape_txt = " ".join("dim { size: %d }" % d for d in shape)
    return ('node { name: "%s" op: "Placeholder" attr { key: "dtype" value { type: %s } } '
            'attr { key: "shape" value { shape { %s } } } }\n' % (name, DTYPES[dtype], shape_txt))


def node(name, op, inputs, **attrs):
    """A NodeDef in text format; attrs given as ready AttrValue text."""
    txt = 'node { name: "%s" op: "%s" ' % (name, op)
    txt += "".join('input: "%s" ' % i for i in inputs)
    txt += "".join('attr { key: "%s" value { %s } } ' % (k, v) for k, v in sorted(attrs.items()))
    return txt + "}\n"


def type_attr(dtype):
    return "type: %s" % DTYPES[dtype]


def int32_const(name, values):
    vals = " ".join("int_val: %d" % v for v in values)
    return node(name, "Const", [], dtype=type_attr("int32"),
                value="tensor { dtype: DT_INT32 tensor_shape { dim { size: %d } } %s }" % (len(values), vals))


def graph(*nodes):
    return "".join(nodes) + "versions { producer: 1645 }\n"
