package opdefs

import (
	"sync"

	"google.golang.org/protobuf/encoding/prototext"

	"mstream/proto/tfpb"
)

// internalText declares the internal ops (names starting with "_") that TF
// registers in C++ but leaves out of ops.pbtxt, and that mstream's plan-time
// fusion produces or a GraphDef written by TF's grappler may contain. The
// signatures of _FusedMatMul and _FusedConv2D are TF 2.15's
// (core/ops/math_ops.cc, core/ops/nn_ops.cc); _MstreamUnaryChain and
// _MstreamLayerNorm, _MstreamAddLayerNorm, _MstreamAttention,
// _MstreamEinsumBias, _MstreamConv2DMaxPool and _MstreamGatherN are ours.
// _Arg, _Retval, _DeviceArg and _DeviceRetval are the system ops of
// function bodies (core/ops/function_ops.cc): a graph given to
// TF_GraphToFunction or imported from a function's body holds them.
// They are found by Lookup but not listed by All, which stays exactly
// ops.pbtxt (TF_GetAllOpList).
const internalText = `
op {
  name: "_FusedMatMul"
  input_arg { name: "a" type_attr: "T" }
  input_arg { name: "b" type_attr: "T" }
  input_arg { name: "args" type_attr: "T" number_attr: "num_args" }
  output_arg { name: "product" type_attr: "T" }
  attr { name: "transpose_a" type: "bool" default_value { b: false } }
  attr { name: "transpose_b" type: "bool" default_value { b: false } }
  attr { name: "T" type: "type" allowed_values { list { type: [DT_BFLOAT16, DT_HALF, DT_FLOAT] } } }
  attr { name: "num_args" type: "int" has_minimum: true }
  attr { name: "fused_ops" type: "list(string)" default_value { list {} } }
  attr { name: "epsilon" type: "float" default_value { f: 0.0001 } }
  attr { name: "leakyrelu_alpha" type: "float" default_value { f: 0.2 } }
}
op {
  name: "_FusedConv2D"
  input_arg { name: "input" type_attr: "T" }
  input_arg { name: "filter" type_attr: "T" }
  input_arg { name: "args" type_list_attr: "TArgs" }
  input_arg { name: "host_args" type: DT_FLOAT number_attr: "num_host_args" }
  output_arg { name: "output" type_attr: "T" }
  attr { name: "T" type: "type" allowed_values { list { type: [DT_HALF, DT_FLOAT, DT_DOUBLE, DT_INT8, DT_QINT8] } } }
  attr { name: "TArgs" type: "list(type)" has_minimum: true }
  attr { name: "num_args" type: "int" has_minimum: true }
  attr { name: "num_host_args" type: "int" default_value { i: 0 } has_minimum: true }
  attr { name: "strides" type: "list(int)" }
  attr { name: "padding" type: "string" allowed_values { list { s: ["SAME", "VALID", "EXPLICIT"] } } }
  attr { name: "explicit_paddings" type: "list(int)" default_value { list {} } }
  attr { name: "data_format" type: "string" default_value { s: "NHWC" } allowed_values { list { s: ["NHWC", "NCHW", "NCHW_VECT_C"] } } }
  attr { name: "filter_format" type: "string" default_value { s: "HWIO" } allowed_values { list { s: ["HWIO", "OIHW", "OIHW_VECT_I"] } } }
  attr { name: "dilations" type: "list(int)" default_value { list { i: [1, 1, 1, 1] } } }
  attr { name: "use_cudnn_on_gpu" type: "bool" default_value { b: true } }
  attr { name: "fused_ops" type: "list(string)" default_value { list {} } }
  attr { name: "epsilon" type: "float" default_value { f: 0.0001 } }
  attr { name: "leakyrelu_alpha" type: "float" default_value { f: 0.2 } }
}
op {
  name: "_Arg"
  output_arg { name: "output" type_attr: "T" }
  attr { name: "T" type: "type" }
  attr { name: "index" type: "int" has_minimum: true }
  is_stateful: true
}
op {
  name: "_DeviceArg"
  output_arg { name: "output" type_attr: "T" }
  attr { name: "T" type: "type" }
  attr { name: "index" type: "int" has_minimum: true }
  is_stateful: true
}
op {
  name: "_Retval"
  input_arg { name: "input" type_attr: "T" }
  attr { name: "T" type: "type" }
  attr { name: "index" type: "int" has_minimum: true }
  is_stateful: true
}
op {
  name: "_DeviceRetval"
  input_arg { name: "input" type_attr: "T" }
  attr { name: "T" type: "type" }
  attr { name: "index" type: "int" has_minimum: true }
  is_stateful: true
}
op {
  name: "_MstreamUnaryChain"
  input_arg { name: "x" type_attr: "T" }
  output_arg { name: "y" type_attr: "T" }
  attr { name: "T" type: "type" allowed_values { list { type: [DT_FLOAT] } } }
  attr { name: "ops" type: "list(string)" has_minimum: true minimum: 1 }
}
op {
  name: "_MstreamLayerNorm"
  input_arg { name: "x" type_attr: "T" }
  input_arg { name: "gamma" type_attr: "T" }
  input_arg { name: "beta" type_attr: "T" }
  output_arg { name: "y" type_attr: "T" }
  attr { name: "T" type: "type" allowed_values { list { type: [DT_FLOAT] } } }
  attr { name: "epsilon" type: "float" default_value { f: 0.001 } }
  attr { name: "begin_norm_axis" type: "int" default_value { i: -1 } }
  attr { name: "single_axis" type: "bool" default_value { b: false } }
}
op {
  name: "_MstreamAddLayerNorm"
  input_arg { name: "x" type_attr: "T" }
  input_arg { name: "y" type_attr: "T" }
  input_arg { name: "gamma" type_attr: "T" }
  input_arg { name: "beta" type_attr: "T" }
  output_arg { name: "z" type_attr: "T" }
  attr { name: "T" type: "type" allowed_values { list { type: [DT_FLOAT] } } }
  attr { name: "epsilon" type: "float" default_value { f: 0.001 } }
  attr { name: "begin_norm_axis" type: "int" default_value { i: -1 } }
  attr { name: "single_axis" type: "bool" default_value { b: false } }
}
op {
  name: "_MstreamAttention"
  input_arg { name: "q" type_attr: "T" }
  input_arg { name: "k" type_attr: "T" }
  input_arg { name: "v" type_attr: "T" }
  output_arg { name: "out" type_attr: "T" }
  attr { name: "T" type: "type" allowed_values { list { type: [DT_FLOAT] } } }
  attr { name: "scale" type: "float" default_value { f: 1 } }
  attr { name: "scale_q" type: "bool" default_value { b: false } }
  attr { name: "broadcast" type: "bool" default_value { b: false } }
  attr { name: "packed" type: "bool" default_value { b: false } }
}
op {
  name: "_MstreamEinsumBias"
  input_arg { name: "x" type_attr: "T" }
  input_arg { name: "w" type_attr: "T" }
  input_arg { name: "bias" type_attr: "T" }
  output_arg { name: "output" type_attr: "T" }
  attr { name: "equation" type: "string" }
  attr { name: "T" type: "type" allowed_values { list { type: [DT_FLOAT] } } }
}
op {
  name: "_MstreamConv2DMaxPool"
  input_arg { name: "input" type_attr: "T" }
  input_arg { name: "filter" type_attr: "T" }
  input_arg { name: "args" type_list_attr: "TArgs" }
  input_arg { name: "host_args" type: DT_FLOAT number_attr: "num_host_args" }
  output_arg { name: "output" type_attr: "T" }
  attr { name: "T" type: "type" allowed_values { list { type: [DT_FLOAT] } } }
  attr { name: "TArgs" type: "list(type)" has_minimum: true }
  attr { name: "num_args" type: "int" has_minimum: true }
  attr { name: "num_host_args" type: "int" default_value { i: 0 } has_minimum: true }
  attr { name: "strides" type: "list(int)" }
  attr { name: "padding" type: "string" allowed_values { list { s: ["SAME", "VALID", "EXPLICIT"] } } }
  attr { name: "explicit_paddings" type: "list(int)" default_value { list {} } }
  attr { name: "data_format" type: "string" default_value { s: "NHWC" } allowed_values { list { s: ["NHWC"] } } }
  attr { name: "filter_format" type: "string" default_value { s: "HWIO" } allowed_values { list { s: ["HWIO"] } } }
  attr { name: "dilations" type: "list(int)" default_value { list { i: [1, 1, 1, 1] } } }
  attr { name: "use_cudnn_on_gpu" type: "bool" default_value { b: true } }
  attr { name: "fused_ops" type: "list(string)" default_value { list {} } }
  attr { name: "epsilon" type: "float" default_value { f: 0.0001 } }
  attr { name: "leakyrelu_alpha" type: "float" default_value { f: 0.2 } }
  attr { name: "pool_ksize" type: "list(int)" has_minimum: true minimum: 4 }
  attr { name: "pool_strides" type: "list(int)" has_minimum: true minimum: 4 }
  attr { name: "pool_padding" type: "string" allowed_values { list { s: ["SAME", "VALID"] } } }
}
op {
  name: "_MstreamGatherN"
  input_arg { name: "params" type_attr: "Tparams" number_attr: "N" }
  input_arg { name: "indices" type_attr: "Tindices" number_attr: "N" }
  output_arg { name: "output" type_attr: "Tparams" number_attr: "N" }
  attr { name: "N" type: "int" has_minimum: true minimum: 1 }
  attr { name: "Tparams" type: "type" }
  attr { name: "Tindices" type: "type" allowed_values { list { type: [DT_INT32, DT_INT64] } } }
}
`

var (
	internalOnce sync.Once
	internal     map[string]*tfpb.OpDef
)

func loadInternal() {
	var list tfpb.OpList
	if err := prototext.Unmarshal([]byte(internalText), &list); err != nil {
		panic("opdefs: internal op text is malformed: " + err.Error())
	}
	internal = make(map[string]*tfpb.OpDef, len(list.Op))
	for _, op := range list.Op {
		internal[op.Name] = op
	}
}

// Internal returns the OpDef of an internal op that ops.pbtxt leaves out
// (the fused ops, _MstreamUnaryChain, the function body system ops), or nil.
func Internal(op string) *tfpb.OpDef {
	internalOnce.Do(loadInternal)
	return internal[op]
}
