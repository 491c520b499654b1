package graph

import (
	"fmt"
	"strings"
	"testing"

	"mstream/status"
	"mstream/tensor"
)

// ph returns a float Placeholder NodeDef of the given dims ("" = unknown rank).
func ph(name, dims string) string {
	shape := "unknown_rank: true"
	if dims != "-" {
		shape = ""
		for _, d := range strings.Fields(dims) {
			shape += " dim { size: " + d + " }"
		}
	}
	return fmt.Sprintf(`node { name: %q op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } attr { key: "shape" value { shape { %s } } } }`, name, shape)
}

// ci returns an int32 Const NodeDef with the given values as a vector (or a
// scalar when scalar is true).
func ci(name string, scalar bool, vals ...int) string {
	shape := fmt.Sprintf("dim { size: %d }", len(vals))
	if scalar {
		shape = ""
	}
	v := ""
	for _, x := range vals {
		v += fmt.Sprintf(" int_val: %d", x)
	}
	return fmt.Sprintf(`node { name: %q op: "Const" attr { key: "dtype" value { type: DT_INT32 } } attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { %s } %s } } } }`, name, shape, v)
}

// ci2 returns an int32 Const NodeDef of shape [len(vals)/2, 2] (paddings).
func ci2(name string, vals ...int) string {
	v := ""
	for _, x := range vals {
		v += fmt.Sprintf(" int_val: %d", x)
	}
	return fmt.Sprintf(`node { name: %q op: "Const" attr { key: "dtype" value { type: DT_INT32 } } attr { key: "value" value { tensor { dtype: DT_INT32 tensor_shape { dim { size: %d } dim { size: 2 } } %s } } } }`, name, len(vals)/2, v)
}

func op(name, op, attrs string, inputs ...string) string {
	in := ""
	for _, s := range inputs {
		in += fmt.Sprintf(" input: %q", s)
	}
	return fmt.Sprintf(`node { name: %q op: %q %s %s }`, name, op, in, attrs)
}

const (
	aT     = `attr { key: "T" value { type: DT_FLOAT } }`
	aTidx  = `attr { key: "Tidx" value { type: DT_INT32 } }`
	aN2    = `attr { key: "N" value { i: 2 } }`
	aShape = `attr { key: "Tshape" value { type: DT_INT32 } }`
)

func TestShapeInference(t *testing.T) {
	tests := []struct {
		name, graph, want string
	}{
		{"placeholder", ph("out", "2 -1"), "[2,?]"},
		{"placeholder unknown", ph("out", "-"), "<unknown>"},
		{"placeholder scalar", ph("out", ""), "[]"},
		{"const", ci("out", false, 1, 2, 3), "[3]"},
		{"identity", ph("a", "5") + op("out", "Identity", aT, "a"), "[5]"},
		{"matmul", ph("a", "2 3") + ph("b", "3 4") + op("out", "MatMul", aT, "a", "b"), "[2,4]"},
		{"matmul transposed", ph("a", "3 2") + ph("b", "4 3") + op("out", "MatMul", aT+` attr { key: "transpose_a" value { b: true } } attr { key: "transpose_b" value { b: true } }`, "a", "b"), "[2,4]"},
		{"batchmatmul broadcast", ph("a", "5 1 2 3") + ph("b", "7 3 4") + op("out", "BatchMatMulV2", aT, "a", "b"), "[5,7,2,4]"},
		{"einsum projection", ph("a", "-1 64 128") + ph("w", "128 4 32") + op("out", "Einsum", aT+`attr { key: "equation" value { s: "abc,cde->abde" } } attr { key: "N" value { i: 2 } }`, "a", "w"), "[?,64,4,32]"},
		{"einsum attention", ph("a", "-1 64 4 32") + ph("b", "-1 64 4 32") + op("out", "Einsum", aT+`attr { key: "equation" value { s: "aecd,abcd->acbe" } } attr { key: "N" value { i: 2 } }`, "a", "b"), "[?,4,64,64]"},
		{"einsum one side unknown", ph("a", "-1 64 4 32") + ph("b", "-") + op("out", "Einsum", aT+`attr { key: "equation" value { s: "aecd,abcd->acbe" } } attr { key: "N" value { i: 2 } }`, "a", "b"), "[?,4,?,64]"},
		{"einsum ellipsis", ph("a", "2 3 4") + ph("b", "4 5") + op("out", "Einsum", aT+`attr { key: "equation" value { s: "...ij,jk->...ik" } } attr { key: "N" value { i: 2 } }`, "a", "b"), "<unknown>"},
		{"einsum implicit", ph("a", "2 3") + ph("b", "3 4") + op("out", "Einsum", aT+`attr { key: "equation" value { s: "ij,jk" } } attr { key: "N" value { i: 2 } }`, "a", "b"), "<unknown>"},
		{"einsum rank mismatch", ph("a", "2 3 4") + ph("b", "3 4") + op("out", "Einsum", aT+`attr { key: "equation" value { s: "ij,jk->ik" } } attr { key: "N" value { i: 2 } }`, "a", "b"), "<unknown>"},
		{"einsum dims differ", ph("a", "2 3") + ph("b", "5 4") + op("out", "Einsum", aT+`attr { key: "equation" value { s: "ij,jk->ik" } } attr { key: "N" value { i: 2 } }`, "a", "b"), "<unknown>"},
		{"biasadd", ph("a", "-1 4") + ph("b", "4") + op("out", "BiasAdd", aT, "a", "b"), "[?,4]"},
		{"add broadcast", ph("a", "2 1 3") + ph("b", "4 1") + op("out", "AddV2", aT, "a", "b"), "[2,4,3]"},
		{"mul unknown dim", ph("a", "-1 3") + ph("b", "3") + op("out", "Mul", aT, "a", "b"), "[?,3]"},
		{"relu", ph("a", "-1 7") + op("out", "Relu", aT, "a"), "[?,7]"},
		{"reshape -1", ph("a", "4 6") + ci("s", false, -1, 3) + op("out", "Reshape", aT+aShape, "a", "s"), "[8,3]"},
		{"reshape unknown input", ph("a", "-1 6") + ci("s", false, -1, 3) + op("out", "Reshape", aT+aShape, "a", "s"), "[?,3]"},
		{"shape", ph("a", "-1 6") + op("out", "Shape", aT+`attr { key: "out_type" value { type: DT_INT32 } }`, "a"), "[2]"},
		{"reshape from shape", ph("a", "4 6") + ph("b", "3 8") + op("sh", "Shape", aT, "b") + op("out", "Reshape", aT+aShape, "a", "sh"), "[3,8]"},
		{"expanddims", ph("a", "4 6") + ci("d", true, -1) + op("out", "ExpandDims", aT+`attr { key: "Tdim" value { type: DT_INT32 } }`, "a", "d"), "[4,6,1]"},
		{"squeeze all", ph("a", "1 4 1") + op("out", "Squeeze", aT, "a"), "[4]"},
		{"squeeze dims", ph("a", "1 4 1") + op("out", "Squeeze", aT+`attr { key: "squeeze_dims" value { list { i: 0 } } }`, "a"), "[4,1]"},
		{"concat", ph("a", "2 3") + ph("b", "2 5") + ci("ax", true, 1) + op("out", "ConcatV2", aT+aN2+aTidx, "a", "b", "ax"), "[2,8]"},
		{"gather", ph("p", "10 4") + `node { name: "i" op: "Placeholder" attr { key: "dtype" value { type: DT_INT32 } } attr { key: "shape" value { shape { dim { size: 2 } dim { size: 3 } } } } }` + ci("ax", true, 0) +
			op("out", "GatherV2", `attr { key: "Tparams" value { type: DT_FLOAT } } attr { key: "Tindices" value { type: DT_INT32 } } attr { key: "Taxis" value { type: DT_INT32 } }`, "p", "i", "ax"), "[2,3,4]"},
		{"pack", ph("a", "3") + ph("b", "3") + op("out", "Pack", aT+aN2+`attr { key: "axis" value { i: 1 } }`, "a", "b"), "[3,2]"},
		{"transpose", ph("a", "2 3 4") + ci("p", false, 2, 0, 1) + op("out", "Transpose", aT+`attr { key: "Tperm" value { type: DT_INT32 } }`, "a", "p"), "[4,2,3]"},
		{"sum", ph("a", "2 3 4") + ci("ax", false, 1) + op("out", "Sum", aT+aTidx, "a", "ax"), "[2,4]"},
		{"mean keep", ph("a", "2 3 4") + ci("ax", false, -1, 0) + op("out", "Mean", aT+aTidx+`attr { key: "keep_dims" value { b: true } }`, "a", "ax"), "[1,3,1]"},
		{"strided slice", ph("a", "5 6 7") + ci("b", false, 1, 0) + ci("e", false, 3, 0) + ci("s", false, 1, 1) +
			op("out", "StridedSlice", aT+`attr { key: "Index" value { type: DT_INT32 } } attr { key: "end_mask" value { i: 2 } }`, "a", "b", "e", "s"), "[2,6,7]"},
		{"strided slice shrink", ph("a", "5 6") + ci("b", false, -1) + ci("e", false, 0) + ci("s", false, 1) +
			op("out", "StridedSlice", aT+`attr { key: "Index" value { type: DT_INT32 } } attr { key: "shrink_axis_mask" value { i: 1 } }`, "a", "b", "e", "s"), "[6]"},
		{"strided slice unknown", ph("a", "5 6") + `node { name: "b" op: "Placeholder" attr { key: "dtype" value { type: DT_INT32 } } }` + ci("e", false, 0) + ci("s", false, 1) +
			op("out", "StridedSlice", aT+`attr { key: "Index" value { type: DT_INT32 } }`, "a", "b", "e", "s"), "<unknown>"},
		{"fill", ci("d", false, 2, 3) + `node { name: "v" op: "Const" attr { key: "dtype" value { type: DT_FLOAT } } attr { key: "value" value { tensor { dtype: DT_FLOAT tensor_shape {} float_val: 1 } } } }` +
			op("out", "Fill", aT+`attr { key: "index_type" value { type: DT_INT32 } }`, "d", "v"), "[2,3]"},
		// The space/batch/depth ops, as TF's shape functions give them
		// (checked with TF 2.15's graph mode on the same nodes).
		{"spacetobatchnd", ph("a", "-1 7 9 4") + ci("b", false, 2, 2) + ci2("p", 2, 3, 2, 1) + op("out", "SpaceToBatchND", aT, "a", "b", "p"), "[?,6,6,4]"},
		{"spacetobatchnd batch", ph("a", "1 7 9 4") + ci("b", false, 2, 2) + ci2("p", 2, 3, 2, 1) + op("out", "SpaceToBatchND", aT, "a", "b", "p"), "[4,6,6,4]"},
		{"batchtospacend", ph("a", "4 6 6 4") + ci("b", false, 2, 2) + ci2("p", 2, 3, 2, 1) + op("out", "BatchToSpaceND", aT, "a", "b", "p"), "[1,7,9,4]"},
		{"batchtospacend block unknown", ph("a", "4 6 6 4") + `node { name: "b" op: "Placeholder" attr { key: "dtype" value { type: DT_INT32 } } attr { key: "shape" value { shape { dim { size: 2 } } } } }` +
			ci2("p", 0, 0, 0, 0) + op("out", "BatchToSpaceND", aT, "a", "b", "p"), "[?,?,?,4]"},
		{"spacetobatch", ph("a", "2 5 5 3") + ci2("p", 1, 0, 1, 0) + op("out", "SpaceToBatch", aT+`attr { key: "block_size" value { i: 2 } }`, "a", "p"), "[8,3,3,3]"},
		{"spacetodepth", ph("a", "2 4 6 3") + op("out", "SpaceToDepth", aT+`attr { key: "block_size" value { i: 2 } }`, "a"), "[2,2,3,12]"},
		{"depthtospace", ph("a", "2 2 -1 12") + op("out", "DepthToSpace", aT+`attr { key: "block_size" value { i: 2 } }`, "a"), "[2,4,?,3]"},
		{"no shape fn", ph("a", "3") + op("out", "Erfinv", aT, "a"), "<unknown>"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := New()
			if _, err := g.Import(mustParse(t, tc.graph), nil); err != nil {
				t.Fatal(err)
			}
			out := g.Lookup("out")
			if got := g.TensorShape(out.Output(0)).String(); got != tc.want {
				t.Fatalf("shape %s, want %s", got, tc.want)
			}
		})
	}
}

func TestShapeInferenceErrors(t *testing.T) {
	for _, text := range []string{
		ph("a", "2 3") + ph("b", "4 5") + op("out", "MatMul", aT, "a", "b"),
		ph("a", "2 3") + ph("b", "4") + op("out", "AddV2", aT, "a", "b"),
		ph("a", "4 6") + ci("s", false, 5, -1) + op("out", "Reshape", aT+aShape, "a", "s"),
		ph("a", "2 3") + ph("b", "3 5") + ci("ax", true, 0) + op("out", "ConcatV2", aT+aN2+aTidx, "a", "b", "ax"),
	} {
		_, err := New().Import(mustParse(t, text), nil)
		if status.CodeOf(err) != status.InvalidArgument || !strings.Contains(err.Error(), "'out'") {
			t.Errorf("%s: got %v", text, err)
		}
	}
}

func TestSetTensorShape(t *testing.T) {
	g := New()
	text := ph("a", "-1 3") + ph("b", "3 4") + op("mm", "MatMul", aT, "a", "b") + op("r", "Relu", aT, "mm")
	if _, err := g.Import(mustParse(t, text), nil); err != nil {
		t.Fatal(err)
	}
	a, r := g.Lookup("a").Output(0), g.Lookup("r").Output(0)
	v := g.Version()
	if err := g.SetTensorShape(a, known(8, -1)); err != nil {
		t.Fatal(err)
	}
	if s := g.TensorShape(a).String(); s != "[8,3]" {
		t.Fatalf("refined %s", s)
	}
	if s := g.TensorShape(r).String(); s != "[8,4]" {
		t.Fatalf("propagated %s", s)
	}
	if g.Version() == v {
		t.Fatal("version not bumped")
	}
	for _, bad := range []tensor.PartialShape{known(9, 3), known(8), known(8, 3, 1)} {
		if err := g.SetTensorShape(a, bad); status.CodeOf(err) != status.InvalidArgument {
			t.Errorf("%v: got %v", bad, err)
		}
	}
	if err := g.SetTensorShape(a, tensor.Unknown); err != nil || g.TensorShape(a).String() != "[8,3]" {
		t.Fatalf("unknown must not widen: %v %v", err, g.TensorShape(a))
	}
}
